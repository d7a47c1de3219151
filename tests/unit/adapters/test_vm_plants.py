"""The VM lab's planted defects (``tests/vm/plants/*.patch``, docs/vm-lab.md) still apply to
this tree: each shows a VM test failing against the defect it guards, and a plant that no longer
applies proves nothing. A change to the code a plant patches regenerates the plant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.plants import IN_A_CHECKOUT, REPO, applied_paths

PLANTS = sorted((REPO / "tests" / "vm" / "plants").glob("*.patch"))


def test_there_are_plants() -> None:
    assert {p.stem for p in PLANTS} >= {"systemd-units-off", "inventory-adopts-exited"}


@pytest.mark.skipif(not IN_A_CHECKOUT, reason="not a git checkout")
@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.stem)
def test_a_vm_plant_applies_from_the_repositorys_root(plant: Path) -> None:
    patched = applied_paths(plant)
    assert all(path.startswith(("src/cpuset_", "deploy/")) for path in patched), patched
