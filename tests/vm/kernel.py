"""What the guest's kernel says, read from its own files: the CPU topology in sysfs (read here
independently of the product's topology source, so a misreading there cannot agree with
itself), PCI functions and the block devices they give, CPU hotplug, and a container's cgroup
cpuset and ``/proc/<pid>/status``.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from cpuset_adapters import cgroupfs
from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups
from cpuset_lab.kubelet import KubeletClient

CPU = Path("/sys/devices/system/cpu")
NODE = Path("/sys/devices/system/node")


def read_list(path: Path) -> CPUSet:
    return CPUSet.parse(path.read_text().strip(), allow_empty=True)


def online() -> CPUSet:
    return read_list(CPU / "online")


def isolated() -> CPUSet:
    return read_list(CPU / "isolated")


def siblings(cpu: int) -> CPUSet:
    """The SMT siblings of an online ``cpu``, itself included."""
    return read_list(CPU / f"cpu{cpu}" / "topology" / "thread_siblings_list")


def package(cpu: int) -> int:
    return int((CPU / f"cpu{cpu}" / "topology" / "physical_package_id").read_text())


def cores() -> list[CPUSet]:
    """Every physical core as its online threads, lowest CPU first."""
    found: dict[int, CPUSet] = {}
    for cpu in online():
        group = siblings(cpu) & online()
        found.setdefault(group.first(), group)
    return [found[key] for key in sorted(found)]


def nodes() -> dict[int, CPUSet]:
    """NUMA node -> its CPUs (online ones; sysfs drops offline CPUs from ``cpulist``)."""
    return {int(path.name[4:]): read_list(path / "cpulist")
            for path in sorted(NODE.glob("node[0-9]*"))}


def memory_nodes() -> CPUSet:
    """The nodes that have memory (``has_memory``)."""
    return read_list(NODE / "has_memory")


def distances(node: int) -> list[int]:
    return [int(d) for d in (NODE / f"node{node}" / "distance").read_text().split()]


def node_of(cpus: CPUSet) -> CPUSet:
    """The NUMA nodes ``cpus`` belong to."""
    return CPUSet(node for node, members in nodes().items() if not members.isdisjoint(cpus))


PCI = Path("/sys/bus/pci")
_PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def pci_numa_node(address: str) -> int:
    """The NUMA node the kernel gives the PCI function ``address`` (-1: the platform says
    none)."""
    return int((PCI / "devices" / address / "numa_node").read_text())


def pci_functions_bound_to(driver: str) -> list[str]:
    """The PCI functions bound to ``driver`` (none when it is not loaded)."""
    directory = PCI / "drivers" / driver
    if not directory.is_dir():
        return []
    return sorted(entry.name for entry in directory.iterdir()
                  if _PCI_ADDRESS.fullmatch(entry.name))


def nvme_serials(address: str) -> list[str]:
    """The serial numbers of the NVMe controllers of the PCI function ``address``."""
    return sorted((path / "serial").read_text().strip()
                  for path in (PCI / "devices" / address / "nvme").glob("nvme*"))


def disks_of(address: str) -> list[str]:
    """The ``/dev`` nodes of the whole disks (partitions left out) whose sysfs device path runs
    through the PCI function ``address``."""
    return sorted(f"/dev/{entry.name}" for entry in Path("/sys/class/block").iterdir()
                  if not (entry / "partition").exists()
                  and address in entry.resolve().parts)


def block_device_pci(node: str | Path) -> str:
    """The PCI function a block device node hangs off: its major:minor through
    ``/sys/dev/block`` to the nearest PCI address up the device path."""
    info = os.stat(node)
    assert stat.S_ISBLK(info.st_mode), f"{node} is not a block device"
    device = Path(f"/sys/dev/block/{os.major(info.st_rdev)}:{os.minor(info.st_rdev)}").resolve()
    for part in reversed(device.parts):
        if _PCI_ADDRESS.fullmatch(part):
            return part
    raise AssertionError(f"{node} ({device}) is under no PCI function")


def set_online(cpu: int, *, state: bool) -> None:
    """Take ``cpu`` offline or bring it back, for real (``cpuN/online``)."""
    (CPU / f"cpu{cpu}" / "online").write_text("1" if state else "0")


def hotpluggable(cpu: int) -> bool:
    return (CPU / f"cpu{cpu}" / "online").is_file()


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a container runs, as the kernel enforces it."""

    cpus: CPUSet
    """``Cpus_allowed_list`` of its process (equal to its cgroup's effective CPUs)."""
    mems: CPUSet
    """``Mems_allowed_list`` of its process (equal to its cgroup's effective memory nodes)."""
    cgroup: cgroupfs.CgroupCpuset
    """Its cgroup's cpuset files: configured ``cpus``/``mems`` (v2: empty = inherited) and
    effective ones."""


def placement(cri: KubeletClient, container_id: str) -> Placement:
    """The container's cgroup cpuset and its process's allowed CPUs and memory nodes, which
    must agree (an ``AssertionError`` says how they do not; a write landing between the two
    reads is read again, up to 1 s)."""
    status = cri.container_status(container_id)
    assert status.pid is not None, f"{container_id[:12]} has no process ({status.state})"
    assert status.cgroups_path is not None, f"{container_id[:12]} reports no cgroup path"
    cgroup, process = cgroups.container_view(status.cgroups_path, status.pid)
    assert cgroup.effective_cpus == process.cpus, (cgroup, process)
    assert cgroup.effective_mems == process.mems, (cgroup, process)
    return Placement(cpus=process.cpus, mems=process.mems, cgroup=cgroup)


def ancestry(cri: KubeletClient, container_id: str) -> str:
    """The ``cpuset.cpus`` of the container's cgroup and of each ancestor up to the root, one
    line each (for messages: a CPU an ancestor lacks, no descendant can get)."""
    status = cri.container_status(container_id)
    if status.cgroups_path is None:
        return "(no cgroup path)"
    directory = cgroupfs.cgroup_dir(status.cgroups_path)
    lines = []
    while directory not in (cgroupfs.CGROUP_ROOT, directory.parent):
        try:
            cpus = (directory / "cpuset.cpus").read_text().strip()
        except OSError as exc:
            cpus = f"unreadable ({exc.strerror})"
        lines.append(f"  {directory}: cpuset.cpus={cpus or '(empty: inherited)'}")
        directory = directory.parent
    return "cgroups, innermost first:\n" + "\n".join(lines)


V1_CPUSET = cgroupfs.CGROUP_ROOT / "cpuset"
_POD_TIERS = ("kubepods", "burstable", "besteffort")


def v1_pod_tiers() -> list[Path]:
    """The kubelet-style cgroups above containers (``kubepods``, its QoS tiers and the
    ``pod<uid>`` directories) in the v1 cpuset hierarchy, parents before children."""
    found = [directory for directory in V1_CPUSET.rglob("*")
             if directory.is_dir() and (directory.name in _POD_TIERS
                                        or directory.name.startswith("pod"))]
    return sorted(found, key=lambda d: (len(d.parts), d))


def restore_v1_pod_tiers() -> None:
    """Give the pod tiers every CPU of their parent again, top down: what an operator (or a
    node agent) must do on cgroup v1 after a CPU comes back online, because the kernel removed
    it from every cpuset when it went offline and restores it to none."""
    for directory in v1_pod_tiers():
        cpus = (directory.parent / "cpuset.cpus").read_text().strip()
        (directory / "cpuset.cpus").write_text(cpus)
