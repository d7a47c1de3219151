"""Memory nodes for pinned CPUs: the union of their nodes, memoryless nodes resolved by distance."""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.policy.numa import NumaUnresolvableError, memory_nodes_for
from cpuset_core.topology import Topology
from tests.unit.core.topologies import (
    DUAL_SOCKET,
    EPYC,
    MEMORYLESS_MIDDLE_NODE,
    MEMORYLESS_SECOND_NODE,
    NPS4,
    cpus,
    one_cpu_per_node,
)


@pytest.mark.parametrize(("topology", "pins", "nodes"), [
    (DUAL_SOCKET, "0", "0"),
    (DUAL_SOCKET, "0-3,8-11", "0"),
    (DUAL_SOCKET, "3-4", "0-1"),
    (DUAL_SOCKET, "8,15", "0-1"),
    (EPYC, "0,31", "0-1"),
    (NPS4, "0,16,32,48", "0-3"),
    (NPS4, "128,255", "0,7"),
    (DUAL_SOCKET, "", ""),
], ids=["one-cpu", "whole-node", "two-nodes", "two-nodes-by-siblings", "epyc", "four-nodes",
        "first-and-last", "empty"])
def test_memory_nodes_are_the_union_of_the_pinned_cpus_nodes(topology: Topology, pins: str,
                                                             nodes: str) -> None:
    assert memory_nodes_for(topology, cpus(pins)) == cpus(nodes)


@pytest.mark.parametrize(("pins", "nodes"), [
    ("1", "0"),      # node 1 is 12 from node 0 (same socket), 32 from nodes 2 and 3
    ("0-1", "0"),
    ("1,3", "0,3"),
    ("1-2", "0,2"),
])
def test_memoryless_node_is_replaced_by_its_nearest_memory_node(pins: str, nodes: str) -> None:
    assert memory_nodes_for(MEMORYLESS_SECOND_NODE, cpus(pins)) == cpus(nodes)


def test_memoryless_node_with_equally_near_memory_nodes_gets_all_of_them() -> None:
    assert memory_nodes_for(MEMORYLESS_MIDDLE_NODE, cpus("1")) == cpus("0,2")


def test_nearest_memory_node_is_chosen_by_slit_distance_not_by_number() -> None:
    topology = one_cpu_per_node(4, memory=cpus("0,1,3"), distances={
        2: {0: 20, 1: 17, 2: 10, 3: 17},
    })
    assert memory_nodes_for(topology, cpus("2")) == cpus("1,3")


def test_memory_nodes_with_unknown_distance_are_not_candidates() -> None:
    topology = one_cpu_per_node(3, memory=cpus("0,2"), distances={1: {2: 30}})
    assert memory_nodes_for(topology, cpus("1")) == cpus("2")


def test_memoryless_node_without_any_known_distance_is_unresolvable() -> None:
    topology = one_cpu_per_node(2, memory=cpus("0"), distances={})
    with pytest.raises(NumaUnresolvableError, match="NUMA node 1 has no memory"):
        memory_nodes_for(topology, cpus("1"))


def test_memory_node_cpus_resolve_even_when_a_memoryless_node_has_no_distance() -> None:
    topology = one_cpu_per_node(2, memory=cpus("0"), distances={})
    assert memory_nodes_for(topology, cpus("0")) == cpus("0")


@pytest.mark.parametrize("pins", ["16", "0,99"])
def test_unknown_cpu_is_unresolvable_and_named(pins: str) -> None:
    with pytest.raises(NumaUnresolvableError, match=r"CPU\(s\) (16|99) have no NUMA information"):
        memory_nodes_for(DUAL_SOCKET, cpus(pins))


def test_every_node_has_memory_when_the_topology_does_not_say() -> None:
    topology = Topology(cpus=DUAL_SOCKET.cpus, online=DUAL_SOCKET.online, memory_nodes=None)
    assert memory_nodes_for(topology, cpus("0,4")) == cpus("0-1")
    assert memory_nodes_for(topology, EMPTY) == EMPTY
