"""Reading and cleaning up what the lab's containers leave in the kernel: processes' allowed CPUs
and memory nodes (``/proc/<pid>/status``), a cgroup's CFS quota, online CPUs and memory nodes,
and the pod-level cgroups a kubelet would remove. Cgroup cpuset files are read with the
product's own reader (``cpuset_adapters.cgroupfs``).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cpuset_adapters.cgroupfs import (
    CGROUP_ROOT,
    PROC_ROOT,
    CgroupCpuset,
    cgroup_dir,
    cgroup_version,
    container_cpuset,
    expand_systemd_path,
)
from cpuset_core.cpuset import CPUSet
from cpuset_core.quota import UNLIMITED

SYS_ROOT: Final = Path("/sys")
#: v1 controllers runc creates a directory in for every container (those mounted are used).
V1_CONTROLLERS: Final = ("cpuset", "cpu", "cpuacct", "cpu,cpuacct", "memory", "pids", "blkio",
                         "devices", "freezer", "hugetlb", "net_cls", "net_prio", "net_cls,net_prio",
                         "perf_event", "rdma", "misc", "systemd", "unified")


@dataclass(frozen=True, slots=True)
class ProcessAffinity:
    """``Cpus_allowed_list`` and ``Mems_allowed_list`` of one process (``/proc/<pid>/status``)."""

    pid: int
    cpus: CPUSet
    mems: CPUSet


def online_cpus(sys_root: Path = SYS_ROOT) -> CPUSet:
    return CPUSet.parse((sys_root / "devices/system/cpu/online").read_text().strip())


def online_mems(sys_root: Path = SYS_ROOT) -> CPUSet:
    """Online NUMA nodes (``{0}`` on machines without ``/sys/devices/system/node``)."""
    path = sys_root / "devices/system/node/online"
    return CPUSet.parse(path.read_text().strip()) if path.is_file() else CPUSet([0])


def process_affinity(pid: int, *, proc: Path = PROC_ROOT) -> ProcessAffinity:
    """``Cpus_allowed_list`` / ``Mems_allowed_list`` of ``pid`` (what the scheduler applies)."""
    fields: dict[str, str] = {}
    for line in (proc / str(pid) / "status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    try:
        cpus, mems = fields["Cpus_allowed_list"], fields["Mems_allowed_list"]
    except KeyError as missing:
        raise LookupError(f"/proc/{pid}/status has no {missing.args[0]}") from None
    return ProcessAffinity(pid=pid, cpus=CPUSet.parse(cpus), mems=CPUSet.parse(mems))


def container_view(cgroups_path: str, pid: int, *, reads: int = 10, pause: float = 0.1,
                   root: Path = CGROUP_ROOT, proc: Path = PROC_ROOT,
                   ) -> tuple[CgroupCpuset, ProcessAffinity]:
    """A container's cgroup cpuset and its process's affinity, which the kernel keeps equal.
    Read again, up to ``reads`` times ``pause`` apart, while they differ: a cpuset write that
    lands between the two reads (the plugin moving the container) is no disagreement. The last
    pair when they never agree; the caller says how they differ."""
    cgroup, affinity = container_cpuset(cgroups_path, root=root), process_affinity(pid, proc=proc)
    for _ in range(reads - 1):
        if (cgroup.effective_cpus, cgroup.effective_mems) == (affinity.cpus, affinity.mems):
            break
        time.sleep(pause)
        cgroup = container_cpuset(cgroups_path, root=root)
        affinity = process_affinity(pid, proc=proc)
    return cgroup, affinity


def cfs_quota(cgroups_path: str, *, root: Path = CGROUP_ROOT) -> int:
    """The CFS quota (microseconds per period) the kernel enforces on the cgroup at
    ``cgroups_path``; :data:`UNLIMITED` for none. v1: ``cpu.cfs_quota_us`` (-1 for none), v2:
    the first field of ``cpu.max`` (``max`` for none)."""
    directory = cgroup_dir(cgroups_path, controller="cpu", root=root)
    if cgroup_version(root) == 2:
        limit = (directory / "cpu.max").read_text().split()[0]
        return UNLIMITED if limit == "max" else int(limit)
    return int((directory / "cpu.cfs_quota_us").read_text())


def remove_cgroup(cgroups_path: str, *, root: Path = CGROUP_ROOT, parents: int = 0) -> list[Path]:
    """``rmdir`` the cgroup ``cgroups_path`` in every hierarchy (v1) or the unified tree (v2),
    and then up to ``parents`` of its ancestors, as long as they are empty (``rmdir`` refuses a
    cgroup that still has tasks or children, so nothing in use is touched). Returns what was
    removed. runc deletes a container's own cgroup but not the pod-level parents a kubelet would
    clean up; the lab uses this for those."""
    relative = Path(expand_systemd_path(cgroups_path).lstrip("/"))
    if not relative.parts:
        return []
    bases = [root] if cgroup_version(root) == 2 else [
        root / c for c in V1_CONTROLLERS if (root / c).is_dir() and not (root / c).is_symlink()]
    removed: list[Path] = []
    for base in bases:
        target = relative
        for _ in range(parents + 1):
            if not target.parts:
                break
            directory = base / target
            with contextlib.suppress(FileNotFoundError, OSError):
                os.rmdir(directory)
                removed.append(directory)
            if directory.exists():
                break
            target = target.parent
    return removed
