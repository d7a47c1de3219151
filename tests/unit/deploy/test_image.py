"""The container image definition: a small Dockerfile linter (scripts/build-image builds it for
real, with podman; these checks run without a build)."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess

import pytest

from tests.unit.deploy.schema import REPO

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"


def instructions(text: str) -> list[tuple[str, str]]:
    """Return (INSTRUCTION, arguments) pairs: comments dropped, continuations joined."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        result.append((keyword.upper(), arguments.strip()))
        pending = ""
    return result


def _ignored(path: str) -> bool:
    """Whether .dockerignore excludes PATH: the last matching pattern decides, and a pattern
    starting with ``!`` re-includes (docker's and buildah's rule)."""
    patterns = [p.strip() for p in DOCKERIGNORE.read_text().splitlines()
                if p.strip() and not p.startswith("#")]
    path = path.rstrip("/")
    ignored = False
    for written in patterns:
        negated = written.startswith("!")
        pattern = written.removeprefix("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            ignored = not negated
    return ignored


def _stages() -> list[tuple[str, str]]:
    """Return (base, stage name) for each FROM, the name empty when the stage has none."""
    result = []
    for arguments in _all("FROM"):
        words = arguments.split()
        result.append((words[0], words[2] if len(words) > 2 and words[1].upper() == "AS" else ""))
    return result


def _arg_default(name: str) -> str:
    [default] = [a.partition("=")[2] for a in _all("ARG") if a.partition("=")[0] == name]
    return default


def build_image_paths() -> dict[str, str]:
    """What ``scripts/build-image --print`` says it builds (nothing is built)."""
    out = subprocess.run(["bash", str(REPO / "scripts" / "build-image"), "--print"],
                         check=True, capture_output=True, text=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def _all(keyword: str) -> list[str]:
    return [args for kw, args in instructions(DOCKERFILE.read_text()) if kw == keyword]


def test_the_parser_joins_continuations_and_drops_comments() -> None:
    text = "# c\nFROM a:1\nRUN x \\\n  # inner\n  && y\nCMD [\"z\"]\n"
    assert instructions(text) == [("FROM", "a:1"), ("RUN", "x && y"), ("CMD", '["z"]')]


def test_the_base_image_is_an_argument_whose_default_is_pinned_by_tag() -> None:
    image = _arg_default("BASE")
    name, _, tag = image.partition("@")[0].rpartition(":")
    assert name, f"{image} has no tag"
    assert tag not in ("", "latest")
    assert re.fullmatch(r"python:3\.1[1-9][\w.-]*", image.partition("@")[0])


def test_every_stage_starts_from_the_base_argument_scratch_or_an_earlier_stage() -> None:
    stages = _stages()
    names: set[str] = set()
    for base, name in stages:
        assert base in ("${BASE}", "scratch") or base.startswith("wheels-${"), base
        names.add(name)
    assert stages[-1][0] == "${BASE}"  # the image itself: the base users override


def test_each_wheel_source_the_argument_names_is_a_stage() -> None:
    names = {name for _, name in _stages()}
    assert _arg_default("WHEELS") == "source"  # docker build . builds its own wheels
    assert {"wheels-source", "wheels-prebuilt", "wheels"} <= names
    assert any(base == "wheels-${WHEELS}" and name == "wheels" for base, name in _stages())


def test_the_image_installs_from_the_wheels_alone_and_keeps_no_installer() -> None:
    [install] = [run for run in _all("RUN") if "pip install" in run]
    assert "--no-index" in install
    assert "--find-links /wheels" in install
    assert "from=wheels," in install  # mounted for the one RUN, not copied into a layer
    # pip runs from its wheel in the mount, so no pip is ever installed in the image.
    assert "venv --without-pip /opt/nri-cpuset" in install
    assert re.search(r'set -- /wheels/pip-\*\.whl && \S+/python "\$1"/pip install', install)
    assert install.rstrip().endswith("nri-cpuset --version")


def test_both_wheel_sources_carry_the_pip_the_install_runs() -> None:
    [source] = [run for run in _all("RUN") if "pip wheel" in run]
    assert source.rstrip().endswith(" pip")
    script = (REPO / "scripts" / "build-image").read_text()
    assert re.search(r'"\$tree/src" "\$tree" "pip==', script)


def test_the_build_script_builds_the_projects_version_where_the_dockerfile_reads_wheels() -> None:
    from cpuset_core import __version__

    paths = build_image_paths()
    assert paths["version"] == __version__
    assert paths["image"] == f"localhost/nri-cpuset:{__version__}"
    assert paths["archive"] == f"build/image/nri-cpuset-{__version__}.oci.tar"
    [prebuilt] = [c for c in _all("COPY") if c.endswith(" /wheels/")]
    assert prebuilt.split()[0].rstrip("/") == paths["wheels"]
    assert not _ignored(paths["wheels"])
    assert _ignored(paths["base"])  # the 170 MB base tarball is never sent as context


@pytest.mark.parametrize("keyword", ["ENTRYPOINT", "CMD"])
def test_entrypoint_and_cmd_are_exec_form(keyword: str) -> None:
    [arguments] = _all(keyword)
    parsed = json.loads(arguments)
    assert isinstance(parsed, list)
    assert all(isinstance(p, str) for p in parsed)


def test_the_entrypoint_is_the_plugin_and_runs_it_by_default() -> None:
    [entrypoint] = _all("ENTRYPOINT")
    [cmd] = _all("CMD")
    assert json.loads(entrypoint) == ["nri-cpuset"]
    assert json.loads(cmd) == ["run"]


def test_nothing_is_added_from_a_url() -> None:
    for arguments in _all("ADD"):
        assert "://" not in arguments


def test_pip_keeps_no_cache_in_the_image() -> None:
    installs = [run for run in _all("RUN") if re.search(r"pip (install|wheel)", run)]
    assert installs
    for run in installs:
        for command in re.split(r"&&|;", run):
            if re.search(r"pip (install|wheel)", command):
                assert "--no-cache-dir" in command


def test_the_image_installs_the_engine_the_plugin_pins_from_the_same_tree() -> None:
    # nri-cpuset requires cpuset-core of its own version, built from src/ (src/pyproject.toml):
    # both in one pip call, or pip would look for that cpuset-core on an index.
    builds = [run for run in _all("RUN") if "pip wheel" in run]
    assert any(re.search(r"pip wheel [^&;]*(\S+)/src \1(\s|$)", run) for run in builds)
    copied = {s for copy in _all("COPY") for s in copy.split()[:-1]}
    assert {"pyproject.toml", "setup.py", "MANIFEST.in", "src"} <= copied


def test_the_build_context_sends_what_the_copies_need_and_no_venv_or_git() -> None:
    assert _ignored(".venv")
    assert _ignored(".git")
    sources = [s for copy in _all("COPY") for s in copy.split()[:-1] if not s.startswith("--")]
    assert sources
    for source in sources:
        # The prebuilt wheels exist once scripts/build-image has made them.
        assert (REPO / source).exists() or source.startswith("build/"), source
        assert not _ignored(source), f"{source} is excluded by .dockerignore"


def test_the_build_script_names_the_wheel_source_and_keys_the_install_layer_by_the_wheels() -> None:
    # buildah skips stages by the build arguments given, not the ARG defaults, and its cache
    # does not look inside a RUN's bind mount: both must be passed.
    script = (REPO / "scripts" / "build-image").read_text()
    assert "--build-arg WHEELS=prebuilt" in script
    assert '--build-arg WHEELS_ID="$WHEELS_ID"' in script
    [install] = [run for run in _all("RUN") if "pip install" in run]
    assert "${WHEELS_ID}" in install
    assert "WHEELS_ID=none" in _all("ARG")
