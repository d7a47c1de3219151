"""The two distributions built from this tree (docs/decisions.md, item 22): what each selects,
one version for both, and the development install that sees all of src/.

Building and installing the wheels themselves is the ``dist`` nox session's job (slow, and it
needs the package index); these are the cheap checks of the same promises."""

from __future__ import annotations

import ast
import importlib.util
import tomllib
from pathlib import Path

import yaml

import cpuset_core
from tests.unit.deploy.schema import KUBERNETES, REPO

SRC = REPO / "src"


def _include(project: Path) -> list[str]:
    config = tomllib.loads((project / "pyproject.toml").read_text())
    return list(config["tool"]["setuptools"]["packages"]["find"]["include"])


def _top_level(patterns: list[str]) -> set[str]:
    return {pattern.split(".")[0] for pattern in patterns}


def test_cpuset_core_is_the_engine_distribution_and_nothing_else() -> None:
    assert _top_level(_include(SRC)) == {"cpuset_core"}
    assert tomllib.loads((SRC / "pyproject.toml").read_text())["project"]["dependencies"] == []


def test_nri_cpuset_ships_the_service_the_adapters_and_the_cli_but_not_the_engine() -> None:
    assert _top_level(_include(REPO)) == {"cpuset_service", "cpuset_adapters", "cpuset_cli"}


def test_both_distributions_take_the_version_from_the_engine() -> None:
    core = tomllib.loads((SRC / "pyproject.toml").read_text())
    assert core["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "cpuset_core._version.__version__"}
    plugin = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert set(plugin["project"]["dynamic"]) == {"version", "dependencies"}
    # setup.py parses the same file; its pin is built from what it parsed.
    setup = ast.parse((REPO / "setup.py").read_text())
    pins = [node for node in ast.walk(setup) if isinstance(node, ast.JoinedStr)
            and ast.unparse(node) == "f'cpuset-core=={VERSION}'"]
    assert len(pins) == 1


def test_every_package_under_src_imports_from_the_source_tree() -> None:
    # The editable install puts src/ itself on the path, so packages that ship in neither wheel
    # (development ones) import too, and coverage sees the engine's files at src/cpuset_core.
    packages = sorted(p.parent.name for p in SRC.glob("*/__init__.py"))
    assert {"cpuset_core", "cpuset_service", "cpuset_adapters", "cpuset_cli", "cpuset_lab"} \
        <= set(packages)
    for name in packages:
        spec = importlib.util.find_spec(name)
        assert spec is not None, name
        assert spec.origin == str(SRC / name / "__init__.py"), name


def test_the_engine_says_its_version() -> None:
    parts = cpuset_core.__version__.split(".")
    assert len(parts) == 3
    assert all(part.isdigit() for part in parts)


def test_the_daemonsets_image_tag_is_the_version() -> None:
    # The image is built from this tree (Dockerfile); the base names the tag of this version.
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    assert [image["newTag"] for image in kustomization["images"]] == [cpuset_core.__version__]
