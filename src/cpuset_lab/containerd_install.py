"""The containerd that ``scripts/install-containerd`` unpacked for the lab: where it is, what is
missing, and the lab's errors."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Where ``scripts/install-containerd`` puts things (override with ``NRI_CPUSET_LAB``).
DEFAULT_LAB_DIR: Final = Path("/var/lib/nri-cpuset-lab")
#: The containerd version the lab is built for.
CONTAINERD_VERSION: Final = "1.7.24"
RUNC: Final = Path("/usr/sbin/runc")
K8S_NAMESPACE: Final = "k8s.io"


class LabError(RuntimeError):
    """The lab containerd could not be set up, started or cleaned up."""


class ContainerdNotInstalled(LabError):  # noqa: N818 - reads as a condition, like FileNotFoundError
    """``scripts/install-containerd`` has not been run (or the install is incomplete)."""


@dataclass(frozen=True, slots=True)
class Installation:
    """An unpacked containerd (``<lab>/containerd/usr/bin/{containerd,ctr,containerd-shim-*}``)."""

    prefix: Path

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "usr" / "bin"

    @property
    def containerd(self) -> Path:
        return self.bin_dir / "containerd"

    @property
    def ctr(self) -> Path:
        return self.bin_dir / "ctr"

    def version(self) -> str:
        """``containerd --version``'s version word, e.g. ``1.7.24~ds1``."""
        out = subprocess.run([str(self.containerd), "--version"], capture_output=True, text=True,  # noqa: S603
                             check=True, timeout=30).stdout.split()
        return out[2] if len(out) >= 3 else ""


def lab_dir() -> Path:
    """The lab directory: ``$NRI_CPUSET_LAB`` or the default."""
    return Path(os.environ.get("NRI_CPUSET_LAB") or DEFAULT_LAB_DIR)


def find_installation(prefix: Path | None = None) -> Installation:
    """The unpacked containerd, or ``ContainerdNotInstalled`` saying what is missing."""
    inst = Installation(prefix if prefix is not None else lab_dir() / "containerd")
    missing = [p for p in (inst.containerd, inst.ctr, inst.bin_dir / "containerd-shim-runc-v2",
                           RUNC) if not os.access(p, os.X_OK)]
    if missing:
        raise ContainerdNotInstalled(
            f"missing {', '.join(map(str, missing))}: run `bash scripts/install-containerd` as "
            "root (or set NRI_CPUSET_LAB to where it installed)")
    return inst
