"""Tests for ``Topology``'s CPUs and cores: which CPUs are known, per-CPU queries, cores,
siblings and their order, on hand-built machines.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.topology import CpuInfo, Topology
from tests.unit.core.hand_built_topologies import (
    SMT,
    cpus,
    offline_without_info,
    shuffled_sparse_machine,
)


def offline_with_info() -> Topology:
    """4 CPUs on 2 SMT cores; CPU 3 is described but offline."""
    infos = tuple(CpuInfo(cpu=c, core=c // 2, socket=0, numa=0) for c in range(4))
    return Topology(cpus=infos, online=cpus("0-2"))


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
