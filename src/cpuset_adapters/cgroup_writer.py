"""The kernel fast path: other containers' cpusets written straight into their cgroups.

containerd applies the updates an answer carries one ``runc update`` at a time (13–25 ms each)
while holding its NRI lock; the kernel takes microseconds per ``cpuset.cpus`` write. This
adapter implements the core's :class:`~cpuset_core.ports.ContainerUpdater` by writing those
files; the runtime's own record follows later, in the background (the pusher).

It writes only ``cpuset.cpus`` and ``cpuset.mems`` of the cgroups the runtime named for the
containers the plugin manages (paths as in :mod:`cpuset_adapters.cgroupfs`: v1 and v2,
cgroupfs and systemd drivers). Every refusal (cgroup gone, read-only mount, EINVAL for CPUs the
parent lacks, EBUSY) is reported per container, so the caller sends that one through the
runtime instead.

On cgroup v1 it also writes ``cpuset.sched_load_balance = 0`` in each such cgroup, once, before
its first ``cpuset.cpus``: a v1 write to a cpuset whose flag is 1 rebuilds the scheduler
domains, walking every cpuset and its tasks, so N writes cost O(N²) (82 µs per write at 500
containers, 19 µs with the flag at 0; ``bench/kernel_writes.py``). Only while the root cpuset
balances: the kernel then builds one domain over every CPU whatever the flag below says
(Documentation/admin-guide/cgroup-v1/cpusets.rst, 1.7), so clearing it changes no scheduling.
v2 has no such file (it rebuilds domains only for partition roots). Decision 31.

:class:`CgroupQuotaWriter` lifts a container's CFS quota the same way (issue 44, decision
52): v1 writes ``-1`` to ``cpu.cfs_quota_us``, v2 ``max`` to ``cpu.max`` (the period stays),
what runc writes for a quota of -1.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from cpuset_adapters.cgroupfs import CGROUP_ROOT, cgroup_version, expand_systemd_path, quota_file
from cpuset_adapters.kept_files import KeptFiles
from cpuset_core import ContainerUpdate, CPUSet
from cpuset_core.ports import UpdateOutcome
from cpuset_core.quota import UNLIMITED

_log = logging.getLogger("nri_cpuset.kernel")

BALANCE_FLAG = "cpuset.sched_load_balance"
MAX_REMEMBERED = 10_000
"""Directories remembered before the cache starts over."""

PRUNE_FLOOR = 64
"""Cleared directories remembered before the first look for removed containers."""

PathOf = Callable[[str], str | None]
"""Container id → its cgroup path as the runtime gave it (``None`` when unknown)."""
Refusal = tuple[ContainerUpdate, str]
"""An update the kernel refused, and why."""


def refusals(refused: Sequence[Refusal]) -> UpdateOutcome:
    """The outcome of a batch whose ``refused`` updates failed (each named with its reason)."""
    return UpdateOutcome(failed=tuple(update.container_id for update, _ in refused),
                         detail="; ".join(f"{update.subject}: {why}" for update, why in refused))


class KernelCpusetWriter:
    """Writes containers' ``cpuset.cpus``/``cpuset.mems`` under ``root`` (the host's
    ``/sys/fs/cgroup`` or where a DaemonSet mounts it)."""

    def __init__(self, root: str | Path, path_of: PathOf) -> None:
        self.root = Path(root)
        self._path_of = path_of
        self._version: int | None = None
        self._directories: dict[str, str] = {}
        """cgroup path → its directory, as a string: at 500 containers per decision, building
        ``Path`` objects took a third of the time the writes did."""
        self._unbalanced: dict[str, str] = {}
        """Directory whose balance flag this writer cleared → its container id (pruned of
        removed containers as it grows: bounded by the live ones)."""
        self._prune_at = PRUNE_FLOOR
        self.balance_refused = 0
        """Balance flag writes the kernel refused (the cpus were written all the same)."""
        self.clears_balance = False
        """Whether container cgroups' balance flags are cleared (v1, the root balancing)."""
        self.balance_note = ""
        """Why or why not, for the start log."""
        self.files = KeptFiles()
        """The containers' ``cpuset.cpus`` kept open between writes (closed by :meth:`forget`
        and :meth:`close_files`)."""
        self.read_root_balance()

    def read_root_balance(self) -> None:
        """Decide from the root cpuset's flag whether clearing containers' flags is a no-op
        for scheduling (at build, and again when the fast path is switched on by a reload)."""
        before = self.balance_note
        self.clears_balance, self.balance_note = self._root_balance()
        if not self.clears_balance:
            self._unbalanced.clear()
        if before and before != self.balance_note:  # the first is in the start log
            _log.info("kernel fast path: %s", self.balance_note)

    def _root_balance(self) -> tuple[bool, str]:
        if self.version != 1:
            return False, f"cgroup v{self.version} has no {BALANCE_FLAG}"
        flag = self.root / "cpuset" / BALANCE_FLAG
        try:
            value = flag.read_text().strip()
        except OSError as exc:
            return False, f"{flag} unreadable ({exc.strerror or exc}): containers' flags left"
        if value != "1":
            # A partitioned root: a container's flag would decide its CPUs' domains.
            return False, f"{flag} is {value}: containers' flags left as they are"
        return True, f"{BALANCE_FLAG} cleared in container cgroups (the root balances all CPUs)"

    @property
    def version(self) -> int:
        if self._version is None:
            self._version = cgroup_version(self.root)
        return self._version

    @property
    def unbalanced(self) -> int:
        """Container cgroups remembered as having their balance flag cleared."""
        return len(self._unbalanced)

    def unusable(self) -> str:
        """Why the kernel cannot be written under ``root`` ("" when it can): said once at
        start, so the log tells which path is active and why."""
        base = self.root if self.version == 2 else self.root / "cpuset"
        if not base.is_dir():
            return f"no cpuset hierarchy at {base}"
        if os.statvfs(base).f_flag & os.ST_RDONLY:
            return f"the cgroup mount at {base} is read-only"
        # A file, not the directory: a cgroup2 root is mode 0555, and root without
        # CAP_DAC_OVERRIDE (the systemd unit, the DaemonSet) writes cgroup files as their
        # owner. Checking the directory turned the fast path off under the shipped unit.
        probe = base / ("cgroup.subtree_control" if self.version == 2 else "cpuset.cpus")
        if not probe.is_file():
            return f"no {probe.name} at {base}"
        if not os.access(probe, os.W_OK):
            return f"{probe} is not writable by this process"
        return ""

    def directory(self, cgroups_path: str) -> Path:
        relative = expand_systemd_path(cgroups_path).lstrip("/")
        return self.root / relative if self.version == 2 else self.root / "cpuset" / relative

    def apply(self, updates: Sequence[ContainerUpdate]) -> UpdateOutcome:
        """Write every update; the outcome lists the containers the kernel refused (their
        files may be half written: cpus without mems — the runtime's update then sets both)."""
        return refusals(self.refused(updates))

    def refused(self, updates: Sequence[ContainerUpdate]) -> list[Refusal]:
        """Write every update; the ones the kernel refused, each with why."""
        refused = []
        # One text per distinct set, not per container: a decision's 500 shared containers
        # get one or two sets between them.
        texts: dict[CPUSet, str] = {}
        for update in updates:
            cpus = texts.get(update.cpus)
            if cpus is None:
                cpus = texts[update.cpus] = update.cpus.format()
            problem = self._write(update, cpus)
            if problem:
                refused.append((update, problem))
        return refused

    def holds(self, update: ContainerUpdate) -> bool:
        """Whether the container's files hold the update's values already (read back; a
        file that cannot be read holds nothing)."""
        path = self._path_of(update.container_id)
        if not path:
            return False
        directory = self.directory(path)
        wanted = [("cpuset.cpus", update.cpus)]
        if update.mems is not None:
            wanted.append(("cpuset.mems", update.mems))
        try:
            return all(CPUSet.parse((directory / name).read_text().strip(), allow_empty=True)
                       == value for name, value in wanted)
        except (OSError, ValueError):
            return False

    def _write(self, update: ContainerUpdate, cpus: str) -> str:
        path = self._path_of(update.container_id)
        if not path:
            return "the runtime gave no cgroup path"
        directory = self._directory(path, update.container_id)
        writes = [("cpuset.cpus", cpus)]
        if update.mems is not None and update.mems != update.previous_mems:
            # Memory nodes first when they grow, last when they shrink: like the CPUs, a
            # cgroup never asks for more than both the old and the new value allow at once.
            mems = ("cpuset.mems", str(update.mems))
            grows = update.previous_mems is None or update.mems.issuperset(update.previous_mems)
            writes = [mems, *writes] if grows else [*writes, mems]
        for name, value in writes:
            file = f"{directory}/{name}"
            try:
                if name == "cpuset.cpus":  # the one written at every decision: kept open
                    self.files.write(update.container_id, file, value.encode())
                else:
                    _write_file(file, value)
            except OSError as exc:
                return f"{file}: {exc.strerror or exc}"
        return ""

    def ready(self, container_id: str) -> None:
        """Do now what the container's first write would do besides writing (clear its
        balance flag, open its ``cpuset.cpus`` to keep): called off the hooks' path for every
        container after a resync and for each one that starts, so an integer creation's
        shrink of N shared containers is N writes, not N first writes (a flag cleared is a
        domain rebuild: 0.3 ms each beside 200 cpusets). Whatever fails is left to the write."""
        path = self._path_of(container_id)
        if not path:
            return
        directory = self._directory(path, container_id)
        self.files.keep(container_id, f"{directory}/cpuset.cpus")

    def forget(self, container_id: str) -> None:
        """The container is gone: close what was kept open for it (it pins a removed cgroup)."""
        self.files.forget(container_id)

    def close_files(self) -> None:
        """Close every file kept open (a resync: the next decisions open them again)."""
        self.files.close_all()

    def _directory(self, path: str, container_id: str) -> str:
        """The container cgroup's directory, its balance flag cleared if it must be (once)."""
        directory = self._directories.get(path)
        if directory is None:
            if len(self._directories) > MAX_REMEMBERED:  # containers come and go
                self._directories.clear()
            directory = self._directories[path] = str(self.directory(path))
        if self.clears_balance and directory not in self._unbalanced:
            self._clear_balance(directory, container_id)
        return directory

    def _clear_balance(self, directory: str, container_id: str) -> None:
        """Clear the container cgroup's balance flag; a refusal costs only the speed-up."""
        if len(self._unbalanced) >= self._prune_at:
            self._unbalanced = {d: c for d, c in self._unbalanced.items() if self._path_of(c)}
            self._prune_at = max(PRUNE_FLOOR, 2 * len(self._unbalanced))
        # Remembered even when refused: retrying at every write would cost a syscall each.
        self._unbalanced[directory] = container_id
        try:
            _write_file(f"{directory}/{BALANCE_FLAG}", "0")
        except OSError as exc:
            self.balance_refused += 1
            if self.balance_refused == 1:
                _log.warning("cpuset.sched_load_balance not cleared; writes stay slower", extra={
                    "file": f"{directory}/{BALANCE_FLAG}", "error": exc.strerror or str(exc)})


def _write_file(path: str, value: str) -> None:
    # No O_CREAT: a cgroup that is gone must fail, not leave a stray file behind.
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # as a shell's `echo >` does
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


class CgroupQuotaWriter:
    """Implements ``cpuset_service.quota_lifts.QuotaWriter`` on the cgroup files under
    ``root``; the layout (v1 or v2) is told once, at the first write."""

    def __init__(self, root: str | Path = CGROUP_ROOT) -> None:
        self.root = Path(root)
        self._version: int | None = None

    def lift(self, cgroups_path: str) -> str:
        if self._version is None:
            self._version = cgroup_version(self.root)
        path = quota_file(cgroups_path, self._version, self.root)
        value = b"max" if self._version == 2 else str(UNLIMITED).encode()
        try:
            # No O_CREAT: a missing cgroup is a problem to report, not a file to make (O_TRUNC
            # is what a shell's ``echo >`` does, and the kernel ignores it).
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, value)
            finally:
                os.close(fd)
        except OSError as exc:
            return f"{path}: {exc.strerror or exc}"
        return ""
