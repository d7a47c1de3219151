"""Planted defects (patches that switch one safeguard off, to show a test fails without it)
are only proof while they apply: both the soak's and the VM lab's are checked with this."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IN_A_CHECKOUT = shutil.which("git") is not None and (REPO / ".git").exists()


def applied_paths(plant: Path) -> list[str]:
    """The files ``plant`` patches, after asserting it applies to this tree from its root."""
    done = subprocess.run(["git", "apply", "--check", str(plant)], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    patched = [line[6:] for line in plant.read_text().splitlines() if line.startswith("+++ b/")]
    assert patched
    return patched
