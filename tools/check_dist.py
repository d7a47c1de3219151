"""Build both distributions and install them the way users get them (the ``dist`` nox session).

    python tools/check_dist.py WORKDIR      (from the repository root; needs `build` installed)

1. Builds the wheel and sdist of cpuset-core (project src/) and of nri-cpuset (the root) into
   dist/, each wheel from its sdist, so an sdist that cannot build on its own fails here.
2. Checks what each archive holds: the engine in one wheel, the adapters and the CLI in the
   other, nothing else from src/ (a development package such as a test lab) in either.
3. Installs the cpuset-core wheel alone into a new virtual environment, without an index: it
   must add exactly one distribution, and docs/library.md's examples must print there what the
   document shows (tests/support/doc_examples.py, run with that environment's Python).
4. Installs the nri-cpuset wheel into another new environment with dist/ as a place to find
   wheels: its cpuset-core must be the local wheel; every shipped module must import;
   ``nri-cpuset --version`` and a dry-run ``nri-cpuset plan --demo`` must work.

Every Python here runs with -I, so a PYTHONPATH pointing at src/ cannot hide a missing file.
"""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DIST = REPO / "dist"
VERSION = str(runpy.run_path(str(REPO / "src" / "cpuset_core" / "_version.py"))["__version__"])
CORE_WHEEL = DIST / f"cpuset_core-{VERSION}-py3-none-any.whl"
PLUGIN_WHEEL = DIST / f"nri_cpuset-{VERSION}-py3-none-any.whl"
CORE_SDIST = DIST / f"cpuset_core-{VERSION}.tar.gz"
PLUGIN_SDIST = DIST / f"nri_cpuset-{VERSION}.tar.gz"

# A small two-socket machine for the dry run, so its output does not depend on this one.
TOPOLOGY = {"cpus": {str(cpu): {"socket": cpu % 4 // 2, "numa": cpu % 4 // 2, "core": cpu % 4}
                     for cpu in range(8)}}

# Imports every module of the four packages in the plugin's environment: a shipped module that
# needs something no wheel ships (a development package) fails here, not on a user's node.
# The lab's CRI client and its generated stubs import grpc, which only the `lab` extra installs
# (decision 53): imported here only to prove that is why they cannot be.
_IMPORT_ALL = """
import importlib, pkgutil
LAB = {"cpuset_adapters.cri.grpc_transport", "cpuset_adapters.cri.proto.cri_pb2_grpc"}
for name in ("cpuset_core", "cpuset_service", "cpuset_adapters", "cpuset_cli"):
    package = importlib.import_module(name)
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        if module.name in LAB:
            try:
                importlib.import_module(module.name)
            except ModuleNotFoundError as err:
                assert err.name == "grpc", err
        elif not module.name.endswith(".__main__"):  # that one runs the command
            importlib.import_module(module.name)
print("imported every module")
"""


class DistCheckError(Exception):
    """A promise about the distributions does not hold; the message says which."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise DistCheckError(message)


def run(*command: str | Path, cwd: Path = REPO) -> str:
    result = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True,
                            check=False)
    check(result.returncode == 0, f"{' '.join(map(str, command))} exited {result.returncode}:\n"
                                  f"{result.stdout}{result.stderr}")
    return result.stdout


def build() -> None:
    DIST.mkdir(exist_ok=True)
    for old in [*DIST.glob("cpuset_core-*"), *DIST.glob("nri_cpuset-*")]:
        old.unlink()
    for project in (REPO / "src", REPO):
        run(sys.executable, "-m", "build", "--outdir", DIST, project)
    for archive in (CORE_WHEEL, CORE_SDIST, PLUGIN_WHEEL, PLUGIN_SDIST):
        check(archive.is_file(), f"the build made no {archive.name}")
    print(f"built {', '.join(sorted(p.name for p in DIST.glob('*-' + VERSION + '*')))}")


def top_level(names: list[str], *, strip: int) -> set[str]:
    """The directories at depth ``strip`` of an archive's names, build metadata left out."""
    return {parts[strip] for parts in (name.split("/") for name in names)
            if len(parts) > strip + 1 and not parts[strip].endswith((".dist-info", ".egg-info"))}


def check_contents() -> None:
    wheels = {CORE_WHEEL: {"cpuset_core"}, PLUGIN_WHEEL: {"cpuset_service", "cpuset_adapters",
                                                          "cpuset_cli"}}
    for wheel, packages in wheels.items():
        with zipfile.ZipFile(wheel) as archive:
            found = top_level(archive.namelist(), strip=0)
        check(found == packages, f"{wheel.name} holds {sorted(found)}, not {sorted(packages)}")
    with tarfile.open(CORE_SDIST) as archive:
        found = top_level(archive.getnames(), strip=1)
    check(found == {"cpuset_core"}, f"{CORE_SDIST.name} holds {sorted(found)}")
    with tarfile.open(PLUGIN_SDIST) as archive:
        names = archive.getnames()
    found = top_level([n.split("/", 1)[1] for n in names if "/src/" in n], strip=1)
    check(found == {"cpuset_service", "cpuset_adapters", "cpuset_cli", "cpuset_core"},
          f"{PLUGIN_SDIST.name} holds src/{sorted(found)}")
    core_files = [n for n in names if "/src/cpuset_core/" in n and not n.endswith("/")]
    check([n.rsplit("/", 1)[1] for n in core_files] == ["_version.py"],
          f"{PLUGIN_SDIST.name} carries engine files other than _version.py: {core_files}")
    print("the wheels hold cpuset_core, and cpuset_service + cpuset_adapters + cpuset_cli; "
          "nothing else from src/")


def fresh_venv(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    venv.create(path, with_pip=True)
    return path / "bin" / "python"


def distributions(python: Path) -> set[str]:
    code = ("import importlib.metadata as m; "
            "print('\\n'.join(d.metadata['Name'].lower() for d in m.distributions()))")
    return set(run(python, "-I", "-c", code).split())


def installed(report: Path) -> dict[str, dict[str, Any]]:
    """What ``pip install --report`` says it installed, by distribution name."""
    items = json.loads(report.read_text())["install"]
    return {item["metadata"]["name"].lower(): item for item in items}


def check_core_alone(work: Path) -> None:
    python = fresh_venv(work / "core")
    before = distributions(python)
    report = work / "core-report.json"
    run(python, "-I", "-m", "pip", "install", "--quiet", "--no-index", "--report", report,
        CORE_WHEEL)
    added = distributions(python) - before
    check(added == {"cpuset-core"}, f"installing {CORE_WHEEL.name} added {sorted(added)}")
    check(list(installed(report)) == ["cpuset-core"],
          f"pip installed {list(installed(report))}")
    where = run(python, "-I", "-c", "import cpuset_core; print(cpuset_core.__file__); "
                                    "print(cpuset_core.__version__)").split()
    check(Path(where[0]).is_relative_to(work / "core") and where[1] == VERSION,
          f"cpuset_core came from {where}")
    check((Path(where[0]).parent / "py.typed").is_file(), "cpuset_core has no py.typed")
    print(f"{CORE_WHEEL.name} installs alone: 1 distribution added to {sorted(before)}")
    print(run(python, "-I", REPO / "tests" / "support" / "doc_examples.py",
              REPO / "docs" / "library.md", cwd=work).strip(), "(installed wheel)")


def check_plugin(work: Path) -> None:
    python = fresh_venv(work / "plugin")
    report = work / "plugin-report.json"
    run(python, "-I", "-m", "pip", "install", "--quiet", "--find-links", DIST, "--report", report,
        PLUGIN_WHEEL)
    url = installed(report).get("cpuset-core", {}).get("download_info", {}).get("url", "")
    check(url == CORE_WHEEL.as_uri(), f"cpuset-core came from {url or 'nowhere'}")
    print(f"{PLUGIN_WHEEL.name} installs with {CORE_WHEEL.name} from dist/ and "
          f"{len(installed(report)) - 2} other distributions from the index")
    print(run(python, "-I", "-c", _IMPORT_ALL, cwd=work).strip(), "of the three packages")
    nri_cpuset = python.parent / "nri-cpuset"
    shown = run(nri_cpuset, "--version", cwd=work).strip()
    check(shown == f"nri-cpuset, version {VERSION}", f"nri-cpuset --version said {shown!r}")
    print(shown)
    topology = work / "topology.json"
    topology.write_text(json.dumps(TOPOLOGY))
    steps = json.loads(run(nri_cpuset, "plan", "--demo", "--topology", topology, "-o", "json",
                           cwd=work))
    decided = {(step["container"], step["kind"], step["cpus"]) for step in steps}
    expected = {("default/db/postgres", "integer", "0,4"),
                ("storage/frontend/io", "annotated", "0")}
    check(expected <= decided, f"the dry run decided {sorted(decided)}")
    print("nri-cpuset plan --demo (dry run) decides the demonstration pods")


def main(argv: list[str]) -> int:
    [workdir] = argv
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        build()
        check_contents()
        check_core_alone(work)
        check_plugin(work)
    except DistCheckError as failure:
        print(f"dist: {failure}", file=sys.stderr)
        return 1
    print(f"dist: both distributions of {VERSION} build, install and run as users get them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
