"""Tests for ``Topology``'s NUMA nodes, sockets and L3 groups: listing, membership, memory nodes
and distances, on hand-built machines.
"""

from __future__ import annotations

import pytest

from cpuset_core.topology import CpuInfo, Topology
from tests.unit.core.hand_built_topologies import (
    SMT,
    cpus,
    offline_without_info,
    shuffled_sparse_machine,
    smt_machine,
)


def memoryless_node() -> Topology:
    """Two NUMA nodes of 2 CPUs each; node 1 has CPUs but no memory."""
    infos = tuple(CpuInfo(cpu=c, core=c, socket=0, numa=c // 2) for c in range(4))
    return Topology(cpus=infos, online=cpus("0-3"), memory_nodes=cpus("0"),
                    numa_distances={0: {0: 10, 1: 12}, 1: {0: 12, 1: 10}})


# -- NUMA nodes, sockets, L3 groups --------------------------------------------------------------


def test_numa_nodes_are_listed_in_ascending_order() -> None:
    assert SMT.numa_nodes == (0, 1)
    assert shuffled_sparse_machine().numa_nodes == (0, 2)


@pytest.mark.parametrize(("cpu", "node"), [(0, 0), (3, 0), (4, 1), (11, 0), (12, 1), (15, 1)])
def test_numa_of_returns_the_node_of_a_cpu(cpu: int, node: int) -> None:
    assert SMT.numa_of(cpu) == node


@pytest.mark.parametrize(
    ("node", "members"),
    [
        pytest.param(0, "0-3,8-11", id="node 0"),
        pytest.param(1, "4-7,12-15", id="node 1"),
        pytest.param(2, "", id="unknown node is empty"),
        pytest.param(-1, "", id="negative node is empty"),
    ],
)
def test_cpus_of_numa_returns_the_node_cpus(node: int, members: str) -> None:
    assert SMT.cpus_of_numa(node) == cpus(members)


@pytest.mark.parametrize(
    ("within", "nodes"),
    [
        pytest.param("0", "0", id="one CPU"),
        pytest.param("0,12", "0-1", id="CPUs on both nodes"),
        pytest.param("4-7", "1", id="one node only"),
        pytest.param("", "", id="no CPUs"),
        pytest.param("16-20", "", id="unknown CPUs"),
    ],
)
def test_numa_nodes_of_returns_nodes_holding_the_cpus(within: str, nodes: str) -> None:
    assert SMT.numa_nodes_of(cpus(within)) == cpus(nodes)


def test_sockets_are_listed_in_ascending_order() -> None:
    assert SMT.sockets == (0, 1)
    assert shuffled_sparse_machine().sockets == (1, 3)


@pytest.mark.parametrize(
    ("socket", "members"),
    [(0, "0-3,8-11"), (1, "4-7,12-15"), (2, ""), (-1, "")],
)
def test_cpus_of_socket_returns_the_socket_cpus(socket: int, members: str) -> None:
    assert SMT.cpus_of_socket(socket) == cpus(members)


def test_l3_groups_follow_the_given_l3_ids() -> None:
    # Two CCX-like L3 groups per socket: threads 0-1 / 2-3 of each socket share one.
    topo = smt_machine(l3=lambda cpu: (cpu % 8) // 2)
    assert topo.l3_groups == (cpus("0-1,8-9"), cpus("2-3,10-11"), cpus("4-5,12-13"),
                              cpus("6-7,14-15"))


def test_l3_groups_are_ordered_by_lowest_cpu_not_by_l3_id() -> None:
    topo = smt_machine(l3=lambda cpu: 9 - (cpu % 8) // 4)
    assert topo.l3_groups == (cpus("0-3,8-11"), cpus("4-7,12-15"))


def test_l3_groups_without_l3_ids_are_grouped_by_socket() -> None:
    assert SMT.l3_groups == (cpus("0-3,8-11"), cpus("4-7,12-15"))


def test_l3_groups_mixing_given_and_missing_ids_keep_them_apart() -> None:
    # Socket 0 reports one L3 (id 0); socket 1 reports nothing, so it is grouped by socket.
    topo = smt_machine(l3=lambda cpu: 0 if (cpu % 8) < 4 else None)
    assert topo.l3_groups == (cpus("0-3,8-11"), cpus("4-7,12-15"))
    # An L3 id equal to a socket id does not merge with that socket's id-less CPUs.
    topo = smt_machine(l3=lambda cpu: 1 if (cpu % 8) < 4 else None)
    assert topo.l3_groups == (cpus("0-3,8-11"), cpus("4-7,12-15"))


def test_nodes_with_memory_are_all_nodes_when_not_given() -> None:
    assert SMT.memory_nodes is None
    assert SMT.nodes_with_memory() == cpus("0-1")
    assert shuffled_sparse_machine().nodes_with_memory() == cpus("0,2")


def test_nodes_with_memory_exclude_a_memoryless_node() -> None:
    topo = memoryless_node()
    assert topo.numa_nodes == (0, 1)
    assert topo.cpus_of_numa(1) == cpus("2-3")
    assert topo.nodes_with_memory() == cpus("0")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(0, 0, 10, id="local"),
        pytest.param(0, 1, 21, id="remote"),
        pytest.param(1, 0, 21, id="remote back"),
        pytest.param(0, 7, None, id="unknown target"),
        pytest.param(7, 0, None, id="unknown source"),
        pytest.param(7, 7, None, id="both unknown"),
    ],
)
def test_distance_between_nodes(a: int, b: int, expected: int | None) -> None:
    assert SMT.distance(a, b) == expected


def test_distance_is_unknown_without_a_distance_table() -> None:
    assert offline_without_info().distance(0, 0) is None


def test_distance_of_a_memoryless_node_is_reported() -> None:
    assert memoryless_node().distance(0, 1) == 12
