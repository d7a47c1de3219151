"""What the exclusive allocator tests share: an allocator per named topology, and the checks for
whole cores and the NUMA nodes a set touches.
"""

from __future__ import annotations

from collections.abc import Mapping

from cpuset_core.cpuset import CPUSet
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.topology import Topology
from tests.unit.core.topologies import ALLOCATOR_SHAPES, DUAL_SOCKET, EPYC

ALLOCATORS: Mapping[str, ExclusiveAllocator] = {
    name: ExclusiveAllocator(topology) for name, topology in ALLOCATOR_SHAPES.items()
}


DUAL = ExclusiveAllocator(DUAL_SOCKET)
EPYC_ALLOC = ExclusiveAllocator(EPYC)


def is_whole_cores(topology: Topology, taken: CPUSet) -> bool:
    """True when every core ``taken`` touches is taken with all its online threads."""
    return all((topology.core_cpus(cpu) & topology.online) <= taken for cpu in taken)


def nodes_of(topology: Topology, taken: CPUSet) -> CPUSet:
    return topology.numa_nodes_of(taken)
