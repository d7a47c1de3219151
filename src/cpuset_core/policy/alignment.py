"""The node's alignment policy, in the kubelet Topology Manager's vocabulary, and its check.

* ``none``: devices do not steer CPUs; CPUs are still placed NUMA-aware (the allocator's
  order), never refused for alignment.
* ``best-effort`` (the default): CPUs near the container's devices when they fit, else
  anywhere; never refused for alignment.
* ``restricted``: an integer container's CPUs must lie in the fewest NUMA nodes that could ever
  hold them (on this machine's shape: the kubelet's "preferred" hint) and, when it has device
  hints, within its devices' nodes; otherwise its creation is refused.
* ``single-numa-node``: its CPUs, and its devices when it has some, on one NUMA node;
  otherwise refused (a request larger than any node always is).

The scope says whose hints count: ``container`` (each container's own devices) or ``pod``
(also the NUMA nodes its pod's earlier integer containers took and their devices: NRI hands
containers over one at a time, so a pod's first container decides for the rest).

Pins are never refused for alignment: they name their CPUs (``placing.away_from_devices``
reports a remote one).
"""

from __future__ import annotations

import enum

from cpuset_core.cpuset import CPUSet
from cpuset_core.topology import Topology


class Alignment(enum.Enum):
    """How strictly an integer container's CPUs are aligned with NUMA nodes and its devices."""

    NONE = "none"
    BEST_EFFORT = "best-effort"
    RESTRICTED = "restricted"
    SINGLE_NUMA_NODE = "single-numa-node"

    @property
    def strict(self) -> bool:
        """Whether a container that cannot be aligned is refused."""
        return self in {Alignment.RESTRICTED, Alignment.SINGLE_NUMA_NODE}

    @property
    def uses_devices(self) -> bool:
        return self is not Alignment.NONE


class AlignmentScope(enum.Enum):
    """Whose hints an integer container is aligned with."""

    CONTAINER = "container"
    POD = "pod"


def fewest_nodes(topology: Topology, eligible: CPUSet, count: int,
                 within: CPUSet | None = None) -> int | None:
    """The fewest NUMA nodes (of ``within``, else all) whose ``eligible`` CPUs hold ``count``:
    the machine's shape, not what is free now. ``None`` when all of them together do not."""
    nodes = topology.numa_nodes if within is None else [
        n for n in topology.numa_nodes if n in within]
    sizes = sorted((len(topology.cpus_of_numa(n) & eligible) for n in nodes), reverse=True)
    total = 0
    for taken, size in enumerate(sizes, start=1):
        total += size
        if total >= count:
            return taken
    return None


def misalignment(topology: Topology, policy: Alignment, cpus: CPUSet, *, near: CPUSet,
                 eligible: CPUSet) -> str:
    """What makes ``cpus`` (an integer container's choice) break a strict ``policy``, given the
    hint ``near`` (NUMA nodes of its devices, and its pod's under the pod scope) and the CPUs
    an exclusive container may ever get (``eligible``); "" when they do not."""
    if policy is Alignment.SINGLE_NUMA_NODE:
        return _off_single_node(topology, cpus, near, eligible)
    if policy is Alignment.RESTRICTED:
        return _off_fewest_nodes(topology, cpus, near, eligible)
    return ""


def _off_single_node(topology: Topology, cpus: CPUSet, near: CPUSet, eligible: CPUSet) -> str:
    nodes, count = topology.numa_nodes_of(cpus), len(cpus)
    if len(near) > 1:
        return (f"its devices (and pod) are on NUMA nodes {near}: a container's CPUs and "
                f"devices must share one node")
    if fewest_nodes(topology, eligible, count) != 1:
        return (f"{count} CPU(s) are more than any NUMA node has for exclusive use "
                f"(at most {_largest(topology, eligible)})")
    if near and not nodes <= near:
        return (f"NUMA node {near} (its devices') has too few free CPUs for {count} "
                f"exclusive CPU(s)")
    if len(nodes) > 1:
        return f"no NUMA node has {count} free CPU(s) now"
    return ""


def _off_fewest_nodes(topology: Topology, cpus: CPUSet, near: CPUSet, eligible: CPUSet) -> str:
    nodes, count = topology.numa_nodes_of(cpus), len(cpus)
    fewest = fewest_nodes(topology, eligible, count, within=near or None)
    if fewest is None:
        return (f"{count} CPU(s) are more than its devices' NUMA node(s) {near} have for "
                f"exclusive use")
    if near and not nodes <= near:
        return (f"its devices' NUMA node(s) {near} have too few free CPUs for {count} "
                f"exclusive CPU(s) in {fewest} node(s)")
    if len(nodes) > fewest:
        return (f"{count} CPU(s) fit in {fewest} NUMA node(s) on this machine but only "
                f"{len(nodes)} ({nodes}) hold them free now")
    return ""


def _largest(topology: Topology, eligible: CPUSet) -> int:
    return max((len(topology.cpus_of_numa(n) & eligible) for n in topology.numa_nodes),
               default=0)
