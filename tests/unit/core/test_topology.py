"""Tests for ``Topology``: hand-built machines and every public query."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import CpusetError, TopologyError
from cpuset_core.topology import CpuInfo, Topology


def cpus(text: str) -> CPUSet:
    return CPUSet.parse(text, allow_empty=True)


def smt_machine(l3: Callable[[int], int | None] = lambda _cpu: None) -> Topology:
    """2 sockets x 4 cores x 2 threads = 16 CPUs; CPU n and n+8 are siblings.

    Socket 0 (= NUMA node 0) holds cores 0-3 (CPUs 0-3 and 8-11), socket 1 (= node 1) holds
    cores 0-3 again (CPUs 4-7 and 12-15): the kernel's core id repeats across packages.
    """
    infos = []
    for cpu in range(16):
        thread0 = cpu % 8
        socket = thread0 // 4
        infos.append(CpuInfo(cpu=cpu, core=thread0 % 4, socket=socket, numa=socket, l3=l3(cpu)))
    return Topology(
        cpus=tuple(infos),
        online=cpus("0-15"),
        numa_distances={0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}},
    )


SMT = smt_machine()


def offline_without_info() -> Topology:
    """4 CPUs, one core each; CPU 3 is offline and the kernel says nothing about it."""
    infos = tuple(CpuInfo(cpu=c, core=c, socket=0, numa=0) for c in range(3))
    return Topology(cpus=infos, online=cpus("0-2"))


def offline_with_info() -> Topology:
    """4 CPUs on 2 SMT cores; CPU 3 is described but offline."""
    infos = tuple(CpuInfo(cpu=c, core=c // 2, socket=0, numa=0) for c in range(4))
    return Topology(cpus=infos, online=cpus("0-2"))


def memoryless_node() -> Topology:
    """Two NUMA nodes of 2 CPUs each; node 1 has CPUs but no memory."""
    infos = tuple(CpuInfo(cpu=c, core=c, socket=0, numa=c // 2) for c in range(4))
    return Topology(cpus=infos, online=cpus("0-3"), memory_nodes=cpus("0"),
                    numa_distances={0: {0: 10, 1: 12}, 1: {0: 12, 1: 10}})


def shuffled_sparse_machine() -> Topology:
    """CPUs given out of order, non-contiguous NUMA and socket ids, two dies, mixed SMT."""
    infos = (
        CpuInfo(cpu=5, core=0, socket=3, numa=2, die=1),
        CpuInfo(cpu=1, core=0, socket=1, numa=0),
        CpuInfo(cpu=4, core=0, socket=3, numa=2, die=0),
        CpuInfo(cpu=0, core=0, socket=1, numa=0),
        CpuInfo(cpu=2, core=1, socket=1, numa=0),
    )
    return Topology(cpus=infos, online=cpus("0-2,4-5"))


# -- CPUs and cores ------------------------------------------------------------------------------


def test_known_is_every_described_cpu() -> None:
    assert SMT.known == cpus("0-15")


def test_known_excludes_an_offline_cpu_without_info() -> None:
    assert offline_without_info().known == cpus("0-2")


def test_known_includes_an_offline_cpu_with_info() -> None:
    topo = offline_with_info()
    assert topo.known == cpus("0-3")
    assert topo.online == cpus("0-2")


def test_info_returns_what_the_kernel_said() -> None:
    assert SMT.info(13) == CpuInfo(cpu=13, core=1, socket=1, numa=1)


@pytest.mark.parametrize(
    "query",
    [
        pytest.param(Topology.info, id="info"),
        pytest.param(Topology.core_cpus, id="core_cpus"),
        pytest.param(Topology.siblings, id="siblings"),
        pytest.param(Topology.numa_of, id="numa_of"),
    ],
)
@pytest.mark.parametrize("cpu", [16, -1, 3000])
def test_per_cpu_queries_raise_key_error_for_an_unknown_cpu(
    query: Callable[[Topology, int], object], cpu: int
) -> None:
    with pytest.raises(KeyError):
        query(SMT, cpu)


def test_per_cpu_queries_raise_key_error_for_an_offline_cpu_without_info() -> None:
    with pytest.raises(KeyError):
        offline_without_info().info(3)


@pytest.mark.parametrize(
    ("cpu", "core"),
    [(0, "0,8"), (8, "0,8"), (3, "3,11"), (4, "4,12"), (15, "7,15")],
)
def test_core_cpus_returns_every_thread_of_the_core(cpu: int, core: str) -> None:
    assert SMT.core_cpus(cpu) == cpus(core)


@pytest.mark.parametrize(("cpu", "siblings"), [(0, "8"), (8, "0"), (5, "13"), (14, "6")])
def test_siblings_are_the_other_threads_of_the_core(cpu: int, siblings: str) -> None:
    assert SMT.siblings(cpu) == cpus(siblings)


def test_siblings_of_a_single_thread_core_are_empty() -> None:
    topo = shuffled_sparse_machine()
    assert topo.siblings(2) == EMPTY
    assert topo.core_cpus(2) == cpus("2")


def test_siblings_include_an_offline_thread_with_info() -> None:
    assert offline_with_info().siblings(2) == cpus("3")


def test_core_id_repeated_across_sockets_names_different_cores() -> None:
    assert SMT.info(0).core == SMT.info(4).core
    assert SMT.core_cpus(0) != SMT.core_cpus(4)


def test_core_id_repeated_across_dies_names_different_cores() -> None:
    topo = shuffled_sparse_machine()
    assert topo.core_cpus(4) == cpus("4")
    assert topo.core_cpus(5) == cpus("5")


def test_cores_are_ordered_by_lowest_cpu_id() -> None:
    assert SMT.cores == tuple(cpus(f"{n},{n + 8}") for n in range(8))


def test_cores_of_a_shuffled_machine_are_ordered_by_lowest_cpu_id() -> None:
    assert shuffled_sparse_machine().cores == (cpus("0-1"), cpus("2"), cpus("4"), cpus("5"))


@pytest.mark.parametrize(
    ("within", "expected"),
    [
        pytest.param("0", ["0,8"], id="one thread names its core"),
        pytest.param("0,8", ["0,8"], id="both threads name the core once"),
        pytest.param("0-1", ["0,8", "1,9"], id="two cores"),
        pytest.param("0-15", [f"{n},{n + 8}" for n in range(8)], id="every core"),
        pytest.param("", [], id="nothing"),
        pytest.param("16-20", [], id="unknown CPUs are ignored"),
        pytest.param("2,100", ["2,10"], id="unknown CPU next to a known one"),
    ],
)
def test_cores_within_returns_cores_touching_the_set(within: str, expected: list[str]) -> None:
    assert SMT.cores_within(cpus(within)) == tuple(cpus(core) for core in expected)


def test_cores_within_returns_cores_in_core_order() -> None:
    assert SMT.cores_within(cpus("1,8")) == (cpus("0,8"), cpus("1,9"))


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


# -- value behaviour and validation --------------------------------------------------------------


def test_topologies_built_from_the_same_data_are_equal() -> None:
    assert smt_machine() == smt_machine()
    assert smt_machine() != smt_machine(l3=lambda _cpu: 0)


def test_topology_is_immutable() -> None:
    with pytest.raises(AttributeError):
        SMT.online = EMPTY  # type: ignore[misc]


def test_isolated_defaults_to_empty() -> None:
    assert SMT.isolated == EMPTY


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: Topology(cpus=(CpuInfo(cpu=0, core=0, socket=0, numa=0),
                                   CpuInfo(cpu=0, core=1, socket=0, numa=0)),
                             online=cpus("0")),
            "CPU 0 is described twice",
            id="duplicate CPU",
        ),
        pytest.param(
            lambda: Topology(cpus=(), online=cpus("0")),
            "describes no CPU",
            id="no CPUs",
        ),
        pytest.param(
            lambda: Topology(cpus=(), online=EMPTY),
            "describes no CPU",
            id="no CPUs and nothing online",
        ),
        pytest.param(
            lambda: Topology(cpus=(CpuInfo(cpu=0, core=0, socket=0, numa=0),),
                             online=cpus("0-1")),
            "online CPU(s) 1 have no topology information",
            id="online CPU without info",
        ),
        pytest.param(
            lambda: Topology(cpus=(CpuInfo(cpu=0, core=0, socket=0, numa=0),),
                             online=EMPTY),
            "no CPU is online",
            id="nothing online",
        ),
    ],
)
def test_inconsistent_topology_is_rejected(build: Callable[[], Topology], message: str) -> None:
    with pytest.raises(TopologyError) as caught:
        build()
    assert message in str(caught.value)
    assert isinstance(caught.value, CpusetError)
    assert caught.value.reason == "topology"
