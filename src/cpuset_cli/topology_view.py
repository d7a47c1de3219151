"""What ``nri-cpuset topology`` shows: a core ``Topology`` as plain values for people and JSON.

Every fact comes from the core's ``Topology`` (and ``policy.numa.memory_nodes_for``); this module
only groups and names them. The JSON form (through cattrs) is a stable schema documented in
``docs/cli.md``: fields may be added in a later schema version, never renamed or removed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import cattrs

from cpuset_core.cpuset import CPUSet
from cpuset_core.policy.numa import NumaUnresolvableError, memory_nodes_for
from cpuset_core.topology import Topology

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class CpuSummary:
    """CPU sets in the Linux list format ("" when empty)."""

    described: str
    """Every CPU the topology describes."""
    online: str
    offline: str
    """Described but not online (sysfs describes no CPU whose topology the kernel removed)."""
    isolated: str


@dataclass(frozen=True, slots=True)
class DieView:
    id: int
    cpus: str


@dataclass(frozen=True, slots=True)
class SocketView:
    id: int
    cpus: str
    dies: list[DieView]
    numa_nodes: str
    cores: int


@dataclass(frozen=True, slots=True)
class NumaNodeView:
    id: int
    cpus: str
    """"" for a memory-only node."""
    has_memory: bool
    pinned_mems: str | None
    """``cpuset.mems`` of a container pinned to this node's CPUs (a memoryless node's nearest
    memory nodes); ``None`` when the node has no CPU or no memory node can be named."""
    distances: dict[str, int]
    """SLIT distance to every node, keyed by node id; empty when unknown."""


@dataclass(frozen=True, slots=True)
class L3GroupView:
    id: int
    cpus: str
    sockets: str
    numa_nodes: str


@dataclass(frozen=True, slots=True)
class CoreView:
    """One physical core: ``(socket, die, core)`` with its threads, lowest CPU first."""

    socket: int
    die: int
    core: int
    numa: int
    l3: int
    threads: list[int]


@dataclass(frozen=True, slots=True)
class CoreGroupView:
    """Cores that share a socket, die, NUMA node and L3 group: one line of the table."""

    socket: int
    die: int
    numa: int
    l3: int
    cpus: str
    cores: list[list[int]]


@dataclass(frozen=True, slots=True)
class TopologyView:
    """The document (schema in ``docs/cli.md``)."""

    schema: int
    source: str
    cpus: CpuSummary
    threads_per_core: dict[str, int]
    """Number of cores by their count of described threads, e.g. ``{"2": 54, "1": 2}``."""
    sockets: list[SocketView]
    numa_nodes: list[NumaNodeView]
    l3_groups: list[L3GroupView]
    cores: list[CoreView]
    core_groups: list[CoreGroupView]


def build(topology: Topology, *, source: str) -> TopologyView:
    """Return the view of ``topology``, read from ``source`` (a path, for people)."""
    l3_of = {cpu: n for n, group in enumerate(topology.l3_groups) for cpu in group}
    cores = [_core(topology, core, l3_of) for core in topology.cores]
    return TopologyView(
        schema=SCHEMA_VERSION,
        source=source,
        cpus=CpuSummary(described=topology.known.format(), online=topology.online.format(),
                        offline=(topology.known - topology.online).format(),
                        isolated=topology.isolated.format()),
        threads_per_core={str(n): count for n, count in
                          sorted(Counter(len(c.threads) for c in cores).items(), reverse=True)},
        sockets=[_socket(topology, s, cores) for s in topology.sockets],
        numa_nodes=[_numa_node(topology, n) for n in _all_nodes(topology)],
        l3_groups=[L3GroupView(id=n, cpus=group.format(),
                               sockets=CPUSet(topology.info(c).socket for c in group).format(),
                               numa_nodes=topology.numa_nodes_of(group).format())
                   for n, group in enumerate(topology.l3_groups)],
        cores=cores,
        core_groups=_core_groups(cores),
    )


def as_json(view: TopologyView) -> str:
    return json.dumps(_CONVERTER.unstructure(view), indent=2)


_CONVERTER = cattrs.Converter()


def _core(topology: Topology, core: CPUSet, l3_of: dict[int, int]) -> CoreView:
    info = topology.info(core.first())
    return CoreView(socket=info.socket, die=info.die, core=info.core, numa=info.numa,
                    l3=l3_of[info.cpu], threads=list(core))


def _socket(topology: Topology, socket: int, cores: list[CoreView]) -> SocketView:
    cpus = topology.cpus_of_socket(socket)
    dies: dict[int, int] = {}
    for cpu in cpus:
        die = topology.info(cpu).die
        dies[die] = dies.get(die, 0) | 1 << cpu
    return SocketView(id=socket, cpus=cpus.format(),
                      dies=[DieView(id=d, cpus=CPUSet.from_mask(m).format())
                            for d, m in sorted(dies.items())],
                      numa_nodes=topology.numa_nodes_of(cpus).format(),
                      cores=sum(1 for c in cores if c.socket == socket))


def _all_nodes(topology: Topology) -> list[int]:
    """Nodes with CPUs, and memory-only nodes (known from distances or ``memory_nodes``)."""
    nodes = set(topology.numa_nodes) | set(topology.numa_distances)
    if topology.memory_nodes is not None:
        nodes |= set(topology.memory_nodes)
    return sorted(nodes)


def _numa_node(topology: Topology, node: int) -> NumaNodeView:
    cpus = topology.cpus_of_numa(node)
    pinned_mems: str | None = None
    if cpus:
        try:
            pinned_mems = memory_nodes_for(topology, cpus).format()
        except NumaUnresolvableError:
            pinned_mems = None
    return NumaNodeView(id=node, cpus=cpus.format(),
                        has_memory=node in topology.nodes_with_memory(),
                        pinned_mems=pinned_mems,
                        distances={str(other): d for other, d in
                                   sorted(topology.numa_distances.get(node, {}).items())})


def _core_groups(cores: list[CoreView]) -> list[CoreGroupView]:
    groups: dict[tuple[int, int, int, int], list[list[int]]] = {}
    for c in cores:
        groups.setdefault((c.socket, c.die, c.numa, c.l3), []).append(c.threads)
    return [CoreGroupView(socket=s, die=d, numa=n, l3=l3,
                          cpus=CPUSet(cpu for threads in members for cpu in threads).format(),
                          cores=members)
            for (s, d, n, l3), members in sorted(groups.items())]
