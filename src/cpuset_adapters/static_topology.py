"""A ``TopologySource`` that returns a topology given to it, for tests and dry runs."""

from __future__ import annotations

from cpuset_core.topology import Topology


class StaticTopologySource:
    """Returns the same :class:`Topology` on every call."""

    def __init__(self, topology: Topology) -> None:
        self._topology = topology

    def __repr__(self) -> str:
        return f"StaticTopologySource({len(self._topology.cpus)} CPUs)"

    def read_topology(self) -> Topology:
        return self._topology
