"""Imports run one way through the rooms of the tree: the core at the bottom, then the placement
service, the adapters, the CLI (with the daemon and the composition root), the test lab, and the
chaos soak on top. A module may import its own room and the rooms below it, never one above: an
adapter that reached for the CLI, any product module that reached for the lab, or the lab
reaching for the soak fails here by name.

The core's own purity (standard library only, nothing that does I/O) is checked by
``tests/unit/core/test_core_purity.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.architecture.imports import top_level_imports

SRC = Path(__file__).resolve().parents[3] / "src"

LAYERS = ("cpuset_core", "cpuset_service", "cpuset_adapters", "cpuset_cli", "cpuset_lab",
          "cpuset_soak")
"""Bottom first: each room may import itself and the rooms before it."""


def project_imports(path: Path) -> set[str]:
    """The project rooms (top-level packages of ``src``) that ``path`` imports."""
    return top_level_imports(path) & set(LAYERS)


def allowed(room: str) -> set[str]:
    return set(LAYERS[: LAYERS.index(room) + 1])


MODULES = sorted(p for room in LAYERS for p in (SRC / room).rglob("*.py"))


def test_every_room_has_modules_to_check() -> None:
    rooms = {p.relative_to(SRC).parts[0] for p in MODULES}
    assert rooms == set(LAYERS)


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_a_module_imports_only_its_own_room_and_the_rooms_below(module: Path) -> None:
    room = module.relative_to(SRC).parts[0]
    upward = project_imports(module) - allowed(room)
    assert not upward, f"{module.relative_to(SRC)} ({room}) imports {sorted(upward)} above it"


def test_the_check_notices_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def later():\n    from cpuset_lab import demo\nimport cpuset_core.cpuset\n")
    assert project_imports(bad) == {"cpuset_lab", "cpuset_core"}
    assert project_imports(bad) - allowed("cpuset_adapters") == {"cpuset_lab"}


def test_nothing_imports_the_soak(tmp_path: Path) -> None:
    # The soak is the top room: every other room, the lab included, is below it.
    assert all("cpuset_soak" not in allowed(room) for room in LAYERS[:-1])
    lab = tmp_path / "lab.py"
    lab.write_text("from cpuset_soak.walk import Walk\n")
    assert project_imports(lab) - allowed("cpuset_lab") == {"cpuset_soak"}
