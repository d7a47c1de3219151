"""The VM lab's planted defects (``tests/vm/plants/*.patch``, docs/vm-lab.md) still apply to
this tree: each shows a VM test failing against the defect it guards, and a plant that no longer
applies proves nothing. A change to the code a plant patches regenerates the plant."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PLANTS = sorted((REPO / "tests" / "vm" / "plants").glob("*.patch"))


def test_there_are_plants() -> None:
    assert {p.stem for p in PLANTS} >= {"systemd-units-off", "inventory-adopts-exited"}


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="not a git checkout")
@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.stem)
def test_a_vm_plant_applies_from_the_repositorys_root(plant: Path) -> None:
    done = subprocess.run(["git", "apply", "--check", str(plant)], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    patched = [line[6:] for line in plant.read_text().splitlines() if line.startswith("+++ b/")]
    assert patched
    assert all(path.startswith(("src/cpuset_", "deploy/")) for path in patched), patched
