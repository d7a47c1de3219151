"""What the kernel enforces for each container the soak runs: its cgroup's ``cpuset.cpus`` and
``cpuset.mems`` (v1 or v2, through the product's cgroup reader) and its process's
``Cpus_allowed_list`` / ``Mems_allowed_list`` from ``/proc/PID/status``."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cpuset_adapters import cgroupfs
from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups

from .model import Container


@dataclass(frozen=True, slots=True)
class Enforced:
    """One container as the kernel sees it (``process_*`` empty when it has no process)."""

    cpus: CPUSet
    mems: CPUSet
    process_cpus: CPUSet
    process_mems: CPUSet


KernelView = dict[str, Enforced]
"""Container id → what the kernel enforces; containers whose cgroup is gone are absent."""


def read(containers: Iterable[Container]) -> KernelView:
    view: KernelView = {}
    for container in containers:
        if not container.cid or not container.cgroups_path:
            continue
        try:
            cgroup = cgroupfs.container_cpuset(container.cgroups_path)
        except OSError:
            continue  # going away
        process_cpus = process_mems = CPUSet()
        if container.pid:
            try:
                affinity = cgroups.process_affinity(container.pid)
            except (OSError, LookupError):
                pass
            else:
                process_cpus, process_mems = affinity.cpus, affinity.mems
        view[container.cid] = Enforced(cgroup.effective_cpus, cgroup.effective_mems,
                                       process_cpus, process_mems)
    return view


def numa_nodes(cpus: CPUSet, sys_root: Path = Path("/sys")) -> CPUSet:
    """The NUMA nodes holding ``cpus`` (node 0 on a machine without a node directory)."""
    nodes = sys_root / "devices/system/node"
    found = []
    for node in sorted(nodes.glob("node[0-9]*")) if nodes.is_dir() else []:
        members = CPUSet.parse((node / "cpulist").read_text().strip(), allow_empty=True)
        if not members.isdisjoint(cpus):
            found.append(int(node.name[4:]))
    return CPUSet(found or [0])


def leftover_cgroups(uids: Iterable[str], cids: Iterable[str]) -> list[str]:
    """Cgroup directories (cpuset hierarchy, or the unified tree) still named after one of
    the soak's pods or containers."""
    root = cgroupfs.CGROUP_ROOT
    base = root / "cpuset" if cgroupfs.cgroup_version(root) == 1 else root
    names = {f"pod{u}" for u in uids} | set(cids)
    kubepods = base / "kubepods"
    if not kubepods.is_dir():
        return []
    # os.walk skips what vanishes while it reads (other runs on the node remove their pods'
    # cgroups meanwhile); rglob raised FileNotFoundError at the end of a 60-minute run.
    return sorted(os.path.join(parent, name) for parent, dirs, _files in os.walk(kubepods)
                  for name in dirs if name in names)
