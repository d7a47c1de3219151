"""Memory nodes (``cpuset.mems``) for pinned CPUs, and for integer containers whose memory is
bound (``[cpus] bind_memory``)."""

from __future__ import annotations

from cpuset_core.cpuset import CPUSet
from cpuset_core.topology import Topology


class NumaUnresolvableError(ValueError):
    """No memory node can be named for a CPU set; the message says why."""


def memory_nodes_for(topology: Topology, cpus: CPUSet) -> CPUSet:
    """Return the NUMA nodes an annotated container pinned to ``cpus`` may allocate from.

    That is the union of the CPUs' nodes. A node without memory (CPU-only nodes exist, and the
    kernel rejects them in ``cpuset.mems``) is replaced by the memory node(s) nearest to it by
    SLIT distance. Raises :class:`NumaUnresolvableError` when a CPU is unknown or a memoryless
    node has no known distance to any memory node.
    """
    unknown = cpus - topology.known
    if unknown:
        raise NumaUnresolvableError(f"CPU(s) {unknown} have no NUMA information")
    nodes = topology.numa_nodes_of(cpus)
    with_memory = topology.nodes_with_memory()
    result = nodes & with_memory
    for node in nodes - with_memory:
        result |= _nearest_memory_nodes(topology, node, with_memory)
    return result


def bound_mems(topology: Topology, cpus: CPUSet) -> CPUSet | None:
    """The memory nodes a bound integer container on ``cpus`` gets: theirs (the nearest ones
    with memory for a memoryless node), or ``None`` (left as they are) when the firmware does
    not say which are nearest."""
    try:
        return memory_nodes_for(topology, cpus)
    except NumaUnresolvableError:
        return None


def _nearest_memory_nodes(topology: Topology, node: int, with_memory: CPUSet) -> CPUSet:
    distances = {m: d for m in with_memory if (d := topology.distance(node, m)) is not None}
    if not distances:
        raise NumaUnresolvableError(
            f"NUMA node {node} has no memory and no known distance to a node with memory")
    nearest = min(distances.values())
    return CPUSet(m for m, d in distances.items() if d == nearest)
