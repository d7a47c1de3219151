"""The containerds that ``scripts/install-containerd`` unpacked for the lab (1.7 and 2.x): which
one a run uses, where it is, what is missing, and the lab's errors."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

#: Where ``scripts/install-containerd`` puts things (override with ``NRI_CPUSET_LAB``).
DEFAULT_LAB_DIR: Final = Path("/var/lib/nri-cpuset-lab")
RUNC: Final = Path("/usr/sbin/runc")
K8S_NAMESPACE: Final = "k8s.io"
#: Names a runtime for every lab user that does not pass one (tests, benchmarks, the demo).
RUNTIME_ENV: Final = "NRI_CPUSET_RUNTIME"
DEFAULT_RUNTIME: Final = "1.7"


@dataclass(frozen=True, slots=True, kw_only=True)
class Runtime:
    """One containerd the lab knows: where ``scripts/install-containerd`` unpacks it and which
    configuration format it reads."""

    name: str
    """What ``NRI_CPUSET_RUNTIME`` and ``--runtime`` call it."""
    directory: str
    """Its directory under the lab directory."""
    version: str
    """The upstream version (or the start of it) the unpacked binary reports."""
    major: int

    @property
    def config_version(self) -> int:
        """The ``version`` of the config file it reads: 2 for 1.x, 3 for 2.x."""
        return 2 if self.major == 1 else 3


#: Debian trixie's 1.7.24 (NRI v0.6.1) and forky's 2.1.x (NRI v0.12); the script's too.
RUNTIMES: Final[Mapping[str, Runtime]] = MappingProxyType({
    "1.7": Runtime(name="1.7", directory="containerd", version="1.7.24", major=1),
    "2.x": Runtime(name="2.x", directory="containerd-2", version="2.1.", major=2),
})
#: The default runtime's version.
CONTAINERD_VERSION: Final = RUNTIMES[DEFAULT_RUNTIME].version


class LabError(RuntimeError):
    """The lab containerd could not be set up, started or cleaned up."""


class UnknownRuntime(LabError):  # noqa: N818 - reads as a condition, like KeyError
    """A runtime name the lab does not know (``NRI_CPUSET_RUNTIME``, ``--runtime``)."""


class ContainerdNotInstalled(LabError):  # noqa: N818 - reads as a condition, like FileNotFoundError
    """``scripts/install-containerd`` has not been run (or the install is incomplete)."""


@dataclass(frozen=True, slots=True)
class Installation:
    """An unpacked containerd (``<prefix>/usr/bin/{containerd,ctr,containerd-shim-*}``) of one
    runtime."""

    prefix: Path
    runtime: Runtime

    @property
    def major(self) -> int:
        """containerd's major version (1 or 2): which config format it reads."""
        return self.runtime.major

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


def runtime_named(name: str | None = None) -> Runtime:
    """The runtime called ``name``; ``None`` means ``$NRI_CPUSET_RUNTIME``, or 1.7 when that is
    unset or empty. Raises ``UnknownRuntime`` for any other name."""
    chosen = name if name is not None else (os.environ.get(RUNTIME_ENV) or DEFAULT_RUNTIME)
    try:
        return RUNTIMES[chosen]
    except KeyError:
        source = "" if name is not None else f" (from {RUNTIME_ENV})"
        raise UnknownRuntime(f"unknown containerd runtime {chosen!r}{source}; the lab knows "
                             f"{', '.join(RUNTIMES)}") from None


def find_installation(prefix: Path | None = None, *, runtime: str | None = None) -> Installation:
    """The unpacked containerd of ``runtime`` (see :func:`runtime_named`), in ``prefix`` or its
    directory under the lab. Raises ``UnknownRuntime``, or ``ContainerdNotInstalled`` saying
    what is missing."""
    chosen = runtime_named(runtime)
    inst = Installation(prefix if prefix is not None else lab_dir() / chosen.directory, chosen)
    missing = [p for p in (inst.containerd, inst.ctr, inst.bin_dir / "containerd-shim-runc-v2",
                           RUNC) if not os.access(p, os.X_OK)]
    if missing:
        raise ContainerdNotInstalled(
            f"containerd {chosen.name}: missing {', '.join(map(str, missing))}: run `bash "
            f"scripts/install-containerd --runtime {chosen.name}` as root (or set "
            "NRI_CPUSET_LAB to where it installed)")
    return inst
