"""The image's base as scripts/build-image makes it (decision 53): Debian's minimal python
extracted without apt, dpkg or perl, trimmed of what the plugin never runs. Checked without a
build: what it trims must be nothing the shipped packages import, and what it keeps must be
what the Dockerfile runs."""

from __future__ import annotations

import ast
import re
import sys

from tests.unit.deploy.schema import REPO

SCRIPT = (REPO / "scripts" / "build-image").read_text()
SHIPPED = ("cpuset_core", "cpuset_service", "cpuset_adapters", "cpuset_cli")
STDLIB = "/usr/lib/python3.11/"


def bash_array(name: str) -> list[str]:
    """The words of the bash array ``name=( ... )`` in the script, comments dropped."""
    match = re.search(rf"^{name}=\((.*?)\)$", SCRIPT, re.MULTILINE | re.DOTALL)
    assert match, f"no {name}=( ... ) in scripts/build-image"
    words = []
    for line in match.group(1).splitlines():
        words += line.partition("#")[0].split()
    return words


def trimmed_modules() -> set[str]:
    """Top-level standard-library modules the base leaves out (packages, modules, extension
    modules of lib-dynload)."""
    names = set()
    for path in bash_array("BASE_TRIM"):
        if path.startswith(STDLIB):
            rest = path.removeprefix(STDLIB).removeprefix("lib-dynload/")
            names.add(re.split(r"[/.]", rest)[0])
    return names


def shipped_imports() -> set[str]:
    """Every top-level module the shipped packages import, deferred imports included."""
    found = set()
    for package in SHIPPED:
        for path in (REPO / "src" / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    found |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return found


def test_the_parser_reads_the_trim_list() -> None:
    assert {"sqlite3", "test", "_sqlite3", "readline"} <= trimmed_modules()


def test_the_base_trims_no_module_the_plugin_imports() -> None:
    imported = shipped_imports()
    assert {"json", "ssl", "asyncio", "ctypes"} <= imported  # the walk sees the code
    assert not trimmed_modules() & imported


def test_the_base_trims_only_standard_library_names() -> None:
    # A typo in the list would trim nothing and pass the check above.
    # CPython's own test modules are not in stdlib_module_names.
    for name in trimmed_modules() - {"test", "_ctypes_test"}:
        assert name in sys.stdlib_module_names or name.startswith(("_test", "xx", "_xx")), name


def test_the_base_is_extracted_without_an_installer_or_perl() -> None:
    assert "--variant=extract" in SCRIPT
    [packages] = re.findall(r"^BASE_PACKAGES=(\S+)$", SCRIPT, re.MULTILINE)
    names = packages.split(",")
    assert "python3-minimal" in names
    assert not {"apt", "dpkg", "perl", "perl-base", "python3", "python3-venv"} & set(names)


def test_the_base_keeps_the_shell_and_python_the_dockerfile_runs() -> None:
    # RUN's shell form and `kubectl exec POD -- sh -c 'kill -USR1 1'` need /bin/sh; the venv
    # and the entrypoint need python3.
    kept = bash_array("BASE_KEEP")
    assert {"/bin/sh", "/bin/dash", "/usr/bin/python3", "/usr/bin/python3.11"} <= set(kept)
    assert "/usr/bin/" in bash_array("BASE_TRIM")  # everything else there goes


def test_the_base_tarball_is_named_by_its_recipe() -> None:
    assert re.search(r'^BASE_TAR=\$OUT/base-bookworm-\$\(printf', SCRIPT, re.MULTILINE)
