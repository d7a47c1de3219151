"""The planted defects (``src/cpuset_soak/plants/*.patch``, docs/performance.md) still apply
to this tree: each is how one of the soak's invariants is shown to catch something, and a plant
that no longer applies proves nothing. A change to the code a plant patches regenerates the
plant (``git diff`` of the same one-line defect)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.plants import IN_A_CHECKOUT, REPO, applied_paths

PLANTS = sorted((REPO / "src" / "cpuset_soak" / "plants").glob("*.patch"))


def test_there_are_plants() -> None:
    assert len(PLANTS) >= 10


@pytest.mark.skipif(not IN_A_CHECKOUT, reason="not a git checkout")
@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.stem)
def test_a_plant_applies_from_the_repositorys_root(plant: Path) -> None:
    patched = applied_paths(plant)
    assert all(path.startswith("src/cpuset_") and "cpuset_soak" not in path
               for path in patched), patched
