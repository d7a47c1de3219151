"""What the topology file tests share: a file's document (one CPU's entry, a 2 × 2 machine) and
parsing one as a topology.
"""

from __future__ import annotations

from typing import Any

from cpuset_adapters.topology_file import parse_topology
from cpuset_core.topology import Topology


def _cpu(socket: object = 0, numa: object = 0, core: object = 0, **more: Any) -> dict[str, Any]:
    return {"socket": socket, "numa": numa, "core": core, **more}


def _two_by_two() -> dict[str, Any]:
    """4 CPUs: 2 cores × 2 threads on one socket, one NUMA node per core."""
    return {
        "cpus": {"0": _cpu(numa=0, core=0, l3=0), "1": _cpu(numa=1, core=1, l3=1),
                 "2": _cpu(numa=0, core=0, l3=0), "3": _cpu(numa=1, core=1, l3=1)},
        "online": "0-3",
        "isolated": "1,3",
        "numa_distances": {"0": {"0": 10, "1": 20}, "1": {"0": 20, "1": 10}},
        "memory_nodes": [0, 1],
    }


def _parse(data: object) -> Topology:
    return parse_topology(data, source="topo.json")
