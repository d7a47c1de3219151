"""Named machines for the core's unit tests (pods and containers: ``tests.builders.facts``).

Every machine is an immutable ``Topology``, so module constants are safe to share between tests.
Shapes come from ``cpuset_lab.machines`` (Linux numbering: a core's threads are ``n`` and
``n + total_cores``); the few irregular ones are built by hand from ``CpuInfo``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from cpuset_core.cpuset import CPUSet
from cpuset_core.topology import CpuInfo, Topology
from cpuset_lab.machines import (
    DUAL_SOCKET_HT,
    EPYC_LIKE,
    EPYC_NPS4_256,
    INTEL_112,
    OFFLINE_ISOLATED,
    MachineShape,
    build_topology,
)


def cpus(text: str) -> CPUSet:
    """Parse a CPU list; "" is the empty set."""
    return CPUSet.parse(text, allow_empty=True)



def with_online(topology: Topology, online: str) -> Topology:
    """``topology`` with only ``online`` CPUs online (a hotplug)."""
    return dataclasses.replace(topology, online=CPUSet.parse(online))


# -- machines ----------------------------------------------------------------------------------

DUAL_SOCKET = build_topology(DUAL_SOCKET_HT)
"""16 CPUs, 2 sockets = 2 NUMA nodes, 4 cores × 2 threads each; CPU n and n+8 are siblings.
Node 0: 0-3,8-11. Node 1: 4-7,12-15."""

EPYC = build_topology(EPYC_LIKE)
"""32 CPUs, 1 socket, 2 NUMA nodes, 2 L3 groups per node; CPU n and n+16 are siblings.
Node 0: 0-7,16-23 (L3 0-3,16-19 and 4-7,20-23). Node 1: 8-15,24-31."""

OFFLINE_ISO = build_topology(OFFLINE_ISOLATED)
"""8 CPUs, 4 cores; CPU n and n+4 are siblings; CPU 7 (sibling of 3) offline; 2-3 isolated."""

INTEL = build_topology(INTEL_112)
"""112 CPUs, 2 sockets × 28 cores × 2 threads; CPU n and n+56 are siblings."""

NPS4 = build_topology(EPYC_NPS4_256)
"""256 CPUs, 2 sockets × 4 NUMA nodes × 16 cores × 2 threads; CPU n and n+128 are siblings.
Node k (0..7) holds CPUs 16k..16k+15 and 128+16k..128+16k+15; nodes 0-3 are socket 0."""

NO_SMT = build_topology(MachineShape(sockets=1, numa_per_socket=2, cores_per_numa=4,
                                     threads_per_core=1))
"""8 CPUs, one thread per core; node 0: 0-3, node 1: 4-7."""

FIRST_SIBLING_OFFLINE = build_topology(MachineShape(sockets=1, numa_per_socket=1,
                                                    cores_per_numa=4, threads_per_core=2,
                                                    offline=CPUSet((4,))))
"""7 CPUs: cores {0} (its sibling 4 is offline), {1,5}, {2,6}, {3,7}."""

TWO_SOCKETS_TWO_NODES = build_topology(MachineShape(sockets=2, numa_per_socket=2,
                                                    cores_per_numa=2, threads_per_core=2))
"""16 CPUs, 4 nodes (0,1 on socket 0; 2,3 on socket 1), 2 cores per node; n and n+8 siblings.
Node k holds CPUs 2k, 2k+1, 2k+8, 2k+9."""

MEMORYLESS_SECOND_NODE = build_topology(MachineShape(sockets=2, numa_per_socket=2,
                                                     cores_per_numa=1, threads_per_core=1,
                                                     memoryless_numa=CPUSet((1,))))
"""4 CPUs, CPU k on node k; node 1 has no memory. Distances: 10 local, 12 same socket
(0-1, 2-3), 32 across sockets."""

MEMORYLESS_MIDDLE_NODE = build_topology(MachineShape(sockets=1, numa_per_socket=3,
                                                     cores_per_numa=1, threads_per_core=1,
                                                     memoryless_numa=CPUSet((1,))))
"""3 CPUs, CPU k on node k, one socket; node 1 has no memory and is 12 away from both 0 and 2."""


def one_cpu_per_node(nodes: int, *, memory: CPUSet,
                     distances: Mapping[int, Mapping[int, int]]) -> Topology:
    """A machine with CPU k alone on NUMA node k, with the given memory nodes and distances."""
    return Topology(
        cpus=tuple(CpuInfo(cpu=k, core=k, socket=0, numa=k) for k in range(nodes)),
        online=CPUSet.range(0, nodes - 1),
        numa_distances=distances,
        memory_nodes=memory,
    )


SMT_SHAPES: Mapping[str, Topology] = {
    "DUAL_SOCKET": DUAL_SOCKET,
    "EPYC": EPYC,
    "TWO_SOCKETS_TWO_NODES": TWO_SOCKETS_TWO_NODES,
}
"""Regular SMT-2 machines: every core has exactly two online threads."""

ALLOCATOR_SHAPES: Mapping[str, Topology] = {
    **SMT_SHAPES,
    "OFFLINE_ISO": OFFLINE_ISO,
    "NO_SMT": NO_SMT,
    "FIRST_SIBLING_OFFLINE": FIRST_SIBLING_OFFLINE,
}
"""The small family the allocator's property tests draw from."""

