"""The benchmark's kubelet baseline (``bench/kubelet_baseline.py``) on hand-worked examples, so
the quality comparison rests on a baseline that does what it claims: packed ``takeByTopology``
(whole NUMA nodes / sockets, then whole cores, then threads; fullest domain first; no fit
check; machine-wide averages for "free core" and "free socket")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cpuset_core import CPUSet
from cpuset_lab.machines import DUAL_SOCKET_HT, EPYC_LIKE, OFFLINE_ISOLATED, build_topology

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from kubelet_baseline import KubeletTopology, take_by_topology

# DUAL_SOCKET_HT: node 0 = socket 0 = cores {0,8} {1,9} {2,10} {3,11}; node 1 = socket 1 =
# cores {4,12} {5,13} {6,14} {7,15}. One NUMA node per socket: "NUMA first".
DUAL = KubeletTopology(build_topology(DUAL_SOCKET_HT))
# EPYC_LIKE: one socket, node 0 = cores {0,16} … {7,23}, node 1 = {8,24} … {15,31}:
# "sockets first".
EPYC = KubeletTopology(build_topology(EPYC_LIKE))
# OFFLINE_ISOLATED: cores {0,4} {1,5} {2,6} {3} (CPU 7 offline): 7 CPUs on 4 cores.
OFFLINE = KubeletTopology(build_topology(OFFLINE_ISOLATED))

ALL_DUAL = CPUSet.range(0, 15)


def take(topo: KubeletTopology, available: str | CPUSet, count: int) -> str:
    free = CPUSet.parse(available) if isinstance(available, str) else available
    return take_by_topology(topo, free, count).format()


def test_the_machine_facts_and_averages() -> None:
    assert (DUAL.numa_first, DUAL.cpus_per_core, DUAL.cpus_per_socket) == (True, 2, 8)
    assert (EPYC.numa_first, EPYC.cpus_per_core, EPYC.cpus_per_socket) == (False, 2, 32)
    # 7 online CPUs // 4 cores = 1: the kubelet's average, not any real core's size.
    assert (OFFLINE.num_cpus, OFFLINE.num_cores, OFFLINE.cpus_per_core) == (7, 4, 1)


@pytest.mark.parametrize(("available", "count", "expected"), [
    # Empty machine: the first whole core of the first node (ties by id).
    (ALL_DUAL, 2, "0,8"),
    # A whole core, then one thread from the node that now has fewer free CPUs.
    (ALL_DUAL, 3, "0-1,8"),
    # Packed: node 1 has 6 free CPUs, node 0 has 8, so node 1 is filled first.
    (ALL_DUAL - CPUSet((4, 12)), 2, "5,13"),
    # A single thread goes to the core with the fewest free threads (the orphan CPU 0).
    (ALL_DUAL - CPUSet((8,)), 1, "0"),
    # No fit check: node 1 alone holds 6 CPUs, but node 0 (fuller) is used first and the
    # request spills over into node 1.
    (ALL_DUAL - CPUSet((0, 1, 8, 9)), 6, "2-4,10-12"),
    # A whole NUMA node when the request covers one…
    (ALL_DUAL, 8, "0-3,8-11"),
    # …then whole cores from what is left.
    (ALL_DUAL, 10, "0-4,8-12"),
])
def test_dual_socket(available: CPUSet, count: int, expected: str) -> None:
    assert take(DUAL, available, count) == expected


def test_sockets_first_takes_a_whole_numa_node_then_a_thread_of_the_fuller_node() -> None:
    assert take(EPYC, CPUSet.range(0, 31), 16) == "0-7,16-23"
    # Node 0 has a busy core: node 1 is taken whole, the last CPU comes from node 0.
    assert take(EPYC, CPUSet.range(0, 31) - CPUSet((0, 16)), 17) == "1,8-15,24-31"


def test_the_average_threads_per_core_quirk() -> None:
    # Only core {3} has exactly "CPUsPerCore() = 1" free threads, so it is the only "free core";
    # the last CPU comes from the first two-thread core, splitting it.
    assert take(OFFLINE, "0-6", 2) == "0,3"


def test_requests_beyond_the_available_cpus_fail() -> None:
    with pytest.raises(ValueError, match="not enough cpus"):
        take(DUAL, "0-2", 4)
    assert take(DUAL, "0-2", 0) == ""
