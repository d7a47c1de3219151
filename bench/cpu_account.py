"""CPU time a benchmark's processes spend, in nanoseconds, from cgroup v1's ``cpuacct``: a
process moved into a group of its own is counted there with every thread and every child it
starts afterwards (containerd's shims and their ``runc`` calls with containerd), and the
hierarchy's root counts the whole machine. ``/proc/<pid>/stat`` counts in 10 ms ticks, too
coarse for a 300 ms creation, and this host's kernel keeps no schedstats.

A benchmark's tool (``bench/creation.py``), never part of the product; root only.
"""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path

ROOT = Path("/sys/fs/cgroup/cpuacct")
USAGE = "cpuacct.usage"


def available(root: Path = ROOT) -> bool:
    """Whether cgroup v1's ``cpuacct`` is mounted at ``root`` (not on a cgroup v2 host)."""
    return (root / USAGE).is_file()


def machine_ns(root: Path = ROOT) -> int:
    """CPU time every process on the machine has used since boot."""
    return int((root / USAGE).read_text())


class CpuAccount:
    """A ``cpuacct`` group of one benchmark's own, named ``name`` under ``root``."""

    def __init__(self, name: str, root: Path = ROOT) -> None:
        self.root = root
        self.path = root / name

    def open(self) -> None:
        """Create the group (left over from a killed run: reused)."""
        self.path.mkdir(exist_ok=True)

    def adopt(self, pid: int) -> None:
        """Count ``pid`` (all its threads, and the children it starts from now on) here."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")

    def used_ns(self) -> int:
        """CPU time of everything counted here since the group was made."""
        return int((self.path / USAGE).read_text())

    def close(self) -> None:
        """Hand every process still counted here back to the root, then remove the group."""
        if not self.path.is_dir():
            return
        for line in (self.path / "cgroup.procs").read_text().split():
            # A process may exit between the read and the move: nothing left to move.
            with contextlib.suppress(ProcessLookupError):
                (self.root / "cgroup.procs").write_text(f"{line}\n")
        try:
            self.path.rmdir()
        except OSError as error:  # a process started while we moved the others
            if error.errno != errno.EBUSY:
                raise
            print(f"cpu account {self.path} still busy: left in place")
