"""Synthetic machine shapes: a pure ``Topology`` builder and a writer of matching sysfs trees."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

from cpuset_core.cpuset import EMPTY, MAX_ID, CPUSet
from cpuset_core.topology import CpuInfo, Topology

LOCAL_DISTANCE: Final = 10
SAME_SOCKET_DISTANCE: Final = 12
OTHER_SOCKET_DISTANCE: Final = 32


@dataclass(frozen=True, slots=True)
class MachineShape:
    """A regular machine: every socket has the same NUMA nodes, every node the same cores.

    ``offline`` and ``isolated`` are CPU ids; ``memoryless_numa`` names NUMA nodes without memory
    (``None``, like the empty set: every node has memory).
    """

    sockets: int
    numa_per_socket: int
    cores_per_numa: int
    threads_per_core: int
    l3_per_numa: int = 1
    offline: CPUSet = EMPTY
    isolated: CPUSet = EMPTY
    memoryless_numa: CPUSet | None = None

    def __post_init__(self) -> None:
        for name in ("sockets", "numa_per_socket", "cores_per_numa", "threads_per_core",
                     "l3_per_numa"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.l3_per_numa > self.cores_per_numa:
            raise ValueError(f"l3_per_numa={self.l3_per_numa} exceeds "
                             f"cores_per_numa={self.cores_per_numa}: an L3 group needs a core")
        if self.total_cpus > MAX_ID + 1:
            raise ValueError(f"{self.total_cpus} CPUs exceed the id limit {MAX_ID}")
        for name, cpus in (("offline", self.offline), ("isolated", self.isolated)):
            if not cpus.issubset(self.all_cpus):
                raise ValueError(f"{name} CPU(s) {cpus - self.all_cpus} are not on this machine "
                                 f"(CPUs {self.all_cpus})")
        if self.offline == self.all_cpus:
            raise ValueError("every CPU is offline")
        if self.memoryless_numa is not None and not self.memoryless_numa <= self.numa_nodes:
            raise ValueError(f"memoryless node(s) {self.memoryless_numa - self.numa_nodes} are "
                             f"not on this machine (nodes {self.numa_nodes})")

    @property
    def total_cores(self) -> int:
        return self.sockets * self.numa_per_socket * self.cores_per_numa

    @property
    def total_cpus(self) -> int:
        return self.total_cores * self.threads_per_core

    @property
    def all_cpus(self) -> CPUSet:
        """Every CPU id, online or not (sysfs ``possible`` and ``present``)."""
        return CPUSet.range(0, self.total_cpus - 1)

    @property
    def online(self) -> CPUSet:
        return self.all_cpus - self.offline

    @property
    def numa_nodes(self) -> CPUSet:
        return CPUSet.range(0, self.sockets * self.numa_per_socket - 1)

    @property
    def memory_nodes(self) -> CPUSet:
        """The NUMA nodes that have memory."""
        return self.numa_nodes - (self.memoryless_numa or EMPTY)

    def distance(self, a: int, b: int) -> int:
        """Return the SLIT distance between NUMA nodes ``a`` and ``b``."""
        if a == b:
            return LOCAL_DISTANCE
        if a // self.numa_per_socket == b // self.numa_per_socket:
            return SAME_SOCKET_DISTANCE
        return OTHER_SOCKET_DISTANCE


@dataclass(frozen=True, slots=True)
class _Place:
    """Where one logical CPU sits; ``core_index`` and ``l3`` count across the whole machine."""

    cpu: int
    core_index: int
    core: int
    socket: int
    numa: int
    l3: int


def _places(shape: MachineShape) -> list[_Place]:
    """Every CPU (offline ones too) in ascending id order."""
    cores_per_socket = shape.numa_per_socket * shape.cores_per_numa
    places: list[_Place] = []
    # Linux on x86 enumerates the first thread of every core before any second thread, so a
    # core's threads are N, N + total_cores, ...
    for thread in range(shape.threads_per_core):
        for index in range(shape.total_cores):
            numa, within_numa = divmod(index, shape.cores_per_numa)
            # Spread uneven splits (e.g. 3 L3 groups over 8 cores) as evenly as integers allow.
            l3_within_numa = within_numa * shape.l3_per_numa // shape.cores_per_numa
            places.append(_Place(
                cpu=thread * shape.total_cores + index,
                core_index=index,
                core=index % cores_per_socket,
                socket=index // cores_per_socket,
                numa=numa,
                l3=numa * shape.l3_per_numa + l3_within_numa,
            ))
    return places


def build_topology(shape: MachineShape) -> Topology:
    """Return the topology the sysfs adapter would read from ``write_sysfs_tree(shape, ...)``.

    Offline CPUs are left out (the kernel removes their ``topology/``); L3 group ids are
    numbered by lowest online CPU, as the adapter numbers them; so the two compare equal.
    """
    online = shape.online
    places = [place for place in _places(shape) if place.cpu in online]
    l3_ids: dict[int, int] = {}
    for place in places:
        l3_ids.setdefault(place.l3, len(l3_ids))
    nodes = list(shape.numa_nodes)
    return Topology(
        cpus=tuple(CpuInfo(cpu=p.cpu, core=p.core, socket=p.socket, numa=p.numa, die=0,
                           l3=l3_ids[p.l3]) for p in places),
        online=online,
        isolated=shape.isolated & online,
        numa_distances={a: {b: shape.distance(a, b) for b in nodes} for a in nodes},
        # Explicit even when every node has memory: sysfs always lists has_memory.
        memory_nodes=shape.memory_nodes,
    )


# -- named shapes ------------------------------------------------------------------------------

THIS_MACHINE_LIKE: Final = MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=2,
                                        threads_per_core=1)
"""A small VM: 2 CPUs, one core each, one node."""

DUAL_SOCKET_HT: Final = MachineShape(sockets=2, numa_per_socket=1, cores_per_numa=4,
                                     threads_per_core=2)
"""16 CPUs: 2 sockets × 4 cores × 2 threads, one NUMA node per socket."""

EPYC_LIKE: Final = MachineShape(sockets=1, numa_per_socket=2, cores_per_numa=8,
                                threads_per_core=2, l3_per_numa=2)
"""32 CPUs: one socket split into 2 NUMA nodes, each with 2 L3 groups of 4 cores."""

OFFLINE_ISOLATED: Final = MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=4,
                                       threads_per_core=2, offline=CPUSet((7,)),
                                       isolated=CPUSet.range(2, 3))
"""8 CPUs with CPU 7 (the sibling of CPU 3) offline and CPUs 2-3 isolated."""

INTEL_112: Final = MachineShape(sockets=2, numa_per_socket=1, cores_per_numa=28,
                                threads_per_core=2)
"""112 CPUs: a 2-socket, 28-core-per-socket Xeon."""

EPYC_NPS4_256: Final = MachineShape(sockets=2, numa_per_socket=4, cores_per_numa=16,
                                    threads_per_core=2, l3_per_numa=2)
"""256 CPUs: 2-socket EPYC in NPS4 mode, 8 NUMA nodes, 16 L3 groups of 8 cores."""

BIG_1024: Final = MachineShape(sockets=2, numa_per_socket=8, cores_per_numa=32,
                               threads_per_core=2)
"""1024 CPUs over 16 NUMA nodes, for scale."""

NAMED_SHAPES: Final[Mapping[str, MachineShape]] = MappingProxyType({
    "THIS_MACHINE_LIKE": THIS_MACHINE_LIKE,
    "DUAL_SOCKET_HT": DUAL_SOCKET_HT,
    "EPYC_LIKE": EPYC_LIKE,
    "OFFLINE_ISOLATED": OFFLINE_ISOLATED,
    "INTEL_112": INTEL_112,
    "EPYC_NPS4_256": EPYC_NPS4_256,
    "BIG_1024": BIG_1024,
})


# -- sysfs trees -------------------------------------------------------------------------------


LAB_NODE_KIB: Final = 4 * 1024 * 1024
"""Each NUMA node's ``MemTotal`` in a written sysfs tree, in KiB (a memoryless node: 0)."""


def write_sysfs_tree(shape: MachineShape, root: Path) -> None:
    """Write what a kernel would show for ``shape`` under ``root/devices/system`` (``root``
    plays ``/sys``): the files ``SysfsTopologySource`` reads plus their usual neighbours."""
    system = Path(root) / "devices" / "system"
    cpu_dir = system / "cpu"
    node_dir = system / "node"
    online = shape.online
    places = _places(shape)
    live = [place for place in places if place.cpu in online]
    # Kernels drop an offline CPU from its siblings', caches' and node's lists.
    core_cpus = _group((p.core_index, p.cpu) for p in live)
    l3_cpus = _group((p.l3, p.cpu) for p in live)
    node_cpus = _group((p.numa, p.cpu) for p in live)

    _write_files(cpu_dir, {
        "possible": shape.all_cpus.format(),
        "present": shape.all_cpus.format(),
        "online": online.format(),
        "offline": shape.offline.format(),
        "isolated": shape.isolated.format(),
        "kernel_max": str(MAX_ID),
    })
    for place in places:
        cpu_path = cpu_dir / f"cpu{place.cpu}"
        _write_files(cpu_path, {"online": "1" if place.cpu in online else "0"})
        # The node link survives offlining: it follows registration, not hotplug state.
        os.symlink(f"../../node/node{place.numa}", cpu_path / f"node{place.numa}")
        if place.cpu not in online:
            continue
        siblings = core_cpus[place.core_index].format()
        _write_files(cpu_path / "topology", {
            "core_id": str(place.core),
            "physical_package_id": str(place.socket),
            "die_id": "0",
            "thread_siblings_list": siblings,
            "core_cpus_list": siblings,
        })
        caches = (
            (1, "Data", siblings, place.core_index),
            (1, "Instruction", siblings, place.core_index),
            (2, "Unified", siblings, place.core_index),
            (3, "Unified", l3_cpus[place.l3].format(), place.l3),
        )
        for index, (level, kind, shared, cache_id) in enumerate(caches):
            _write_files(cpu_path / "cache" / f"index{index}", {
                "level": str(level),
                "type": kind,
                "shared_cpu_list": shared,
                "id": str(cache_id),
            })

    nodes = shape.numa_nodes
    _write_files(node_dir, {
        "possible": nodes.format(),
        "online": nodes.format(),
        "has_memory": shape.memory_nodes.format(),
        "has_cpu": CPUSet(node_cpus).format(),
    })
    for node in nodes:
        _write_files(node_dir / f"node{node}", {
            "cpulist": node_cpus.get(node, EMPTY).format(),
            "distance": " ".join(str(shape.distance(node, other)) for other in nodes),
            # What the topology publisher reads: 4 GiB a node, none on a memoryless one.
            "meminfo": f"Node {node} MemTotal:       "
                       f"{LAB_NODE_KIB if node in shape.memory_nodes else 0} kB\n",
        })


def _group(pairs: Iterable[tuple[int, int]]) -> dict[int, CPUSet]:
    masks: dict[int, int] = {}
    for key, cpu in pairs:
        masks[key] = masks.get(key, 0) | 1 << cpu
    return {key: CPUSet.from_mask(mask) for key, mask in masks.items()}


def _write_files(directory: Path, files: Mapping[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        # sysfs attributes end in a newline, even empty ones.
        (directory / name).write_text(text + "\n", encoding="ascii")
