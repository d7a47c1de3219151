"""The core imports only the standard library, and none of the parts of it that do I/O, read a
clock or the environment: an embedding agent inherits no dependency, and the same inputs always
give the same placements."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.unit.architecture.imports import top_level_imports

CORE = Path(__file__).resolve().parents[3] / "src" / "cpuset_core"

# Standard-library modules that would let the core touch the world.
FORBIDDEN = {
    "asyncio", "datetime", "glob", "io", "logging", "os", "pathlib", "random", "secrets",
    "select", "shutil", "signal", "socket", "subprocess", "sys", "tempfile", "threading", "time",
    "urllib", "uuid",
}


_imports = top_level_imports


MODULES = sorted(CORE.rglob("*.py"))


def test_the_core_has_modules_to_check() -> None:
    assert len(MODULES) > 10


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_imports_only_the_pure_standard_library(module: Path) -> None:
    imported = _imports(module) - {"__future__", "cpuset_core"}
    outside = {name for name in imported if name not in sys.stdlib_module_names}
    assert not outside, f"{module.name} imports non-stdlib {sorted(outside)}"
    impure = imported & FORBIDDEN
    assert not impure, f"{module.name} imports {sorted(impure)} (I/O, clock or environment)"


def test_the_purity_check_notices_a_third_party_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import attrs\nfrom os import environ\nfrom . import sibling\n")
    assert _imports(bad) == {"attrs", "os"}
