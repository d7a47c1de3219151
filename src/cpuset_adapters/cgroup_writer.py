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
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from cpuset_adapters.cgroupfs import cgroup_version, expand_systemd_path
from cpuset_core import ContainerUpdate
from cpuset_core.ports import UpdateOutcome

MAX_REMEMBERED = 10_000
"""Directories remembered before the cache starts over."""

PathOf = Callable[[str], str | None]
"""Container id → its cgroup path as the runtime gave it (``None`` when unknown)."""


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

    @property
    def version(self) -> int:
        if self._version is None:
            self._version = cgroup_version(self.root)
        return self._version

    def unusable(self) -> str:
        """Why the kernel cannot be written under ``root`` ("" when it can): said once at
        start, so the log tells which path is active and why."""
        base = self.root if self.version == 2 else self.root / "cpuset"
        if not base.is_dir():
            return f"no cpuset hierarchy at {base}"
        if os.statvfs(base).f_flag & os.ST_RDONLY:
            return f"the cgroup mount at {base} is read-only"
        if not os.access(base, os.W_OK):
            return f"{base} is not writable by this process"
        return ""

    def directory(self, cgroups_path: str) -> Path:
        relative = expand_systemd_path(cgroups_path).lstrip("/")
        return self.root / relative if self.version == 2 else self.root / "cpuset" / relative

    def apply(self, updates: Sequence[ContainerUpdate]) -> UpdateOutcome:
        """Write every update; the outcome lists the containers the kernel refused (their
        files may be half written: cpus without mems — the runtime's update then sets both)."""
        failed: list[str] = []
        problems: list[str] = []
        for update in updates:
            problem = self._write(update)
            if problem:
                failed.append(update.container_id)
                problems.append(f"{update.subject}: {problem}")
        return UpdateOutcome(failed=tuple(failed), detail="; ".join(problems))

    def _write(self, update: ContainerUpdate) -> str:
        path = self._path_of(update.container_id)
        if not path:
            return "the runtime gave no cgroup path"
        directory = self._directories.get(path)
        if directory is None:
            if len(self._directories) > MAX_REMEMBERED:  # containers come and go
                self._directories.clear()
            directory = self._directories[path] = str(self.directory(path))
        writes = [("cpuset.cpus", str(update.cpus))]
        if update.mems is not None and update.mems != update.previous_mems:
            # Memory nodes first when they grow, last when they shrink: like the CPUs, a
            # cgroup never asks for more than both the old and the new value allow at once.
            mems = ("cpuset.mems", str(update.mems))
            grows = update.previous_mems is None or update.mems.issuperset(update.previous_mems)
            writes = [mems, *writes] if grows else [*writes, mems]
        for name, value in writes:
            file = f"{directory}/{name}"
            try:
                _write_file(file, value)
            except OSError as exc:
                return f"{file}: {exc.strerror or exc}"
        return ""


def _write_file(path: str, value: str) -> None:
    # No O_CREAT: a cgroup that is gone must fail, not leave a stray file behind.
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # as a shell's `echo >` does
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)
