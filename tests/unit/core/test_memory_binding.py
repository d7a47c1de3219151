"""Memory binding (issue 31, opt in): with ``[cpus] bind_memory`` integer containers (every
one, or those with a hugepage limit) get ``cpuset.mems`` = the memory nodes of their CPUs,
kept right across live moves, resizes and rebuilds; without it nothing changes (§3.3).

DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8 are siblings.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.model import ContainerFacts, Kind
from cpuset_core.policy.options import AllocationOptions, MemoryBinding
from cpuset_core.settings import Settings
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET, MEMORYLESS_SECOND_NODE, cpus


def engine(binding: MemoryBinding, topology: object = DUAL_SOCKET) -> CpusetEngine:
    return CpusetEngine(topology, Settings(  # type: ignore[arg-type]
        allocation=AllocationOptions(bind_memory=binding)))


def integer(name: str, count: int, *, hugepages: bool = False) -> ContainerFacts:
    return replace(container(name, pod(name), cpu_limit=count), hugepages=hugepages)


@pytest.mark.parametrize(("binding", "hugepages", "bound"), [
    (MemoryBinding.NONE, True, False),
    (MemoryBinding.HUGEPAGES, False, False),
    (MemoryBinding.HUGEPAGES, True, True),
    (MemoryBinding.EXCLUSIVE, False, True),
])
def test_which_integer_containers_are_bound(binding: MemoryBinding, hugepages: bool,
                                            bound: bool) -> None:
    e = engine(binding)
    plan = e.plan_create(pod("db"), integer("db", 2, hugepages=hugepages))
    assert plan.placement is not None
    assert plan.placement.mems == (CPUSet((0,)) if bound else None)


def test_shared_containers_are_never_bound() -> None:
    e = engine(MemoryBinding.EXCLUSIVE)
    plan = e.plan_create(pod("web", qos="burstable"), container("web", pod("web", qos="burstable")))
    assert plan.placement is not None
    assert plan.placement.kind is Kind.SHARED
    assert plan.placement.mems is None


def test_a_bound_container_moved_off_a_pin_takes_its_new_nodes_memory() -> None:
    e = engine(MemoryBinding.EXCLUSIVE)
    e.commit(e.plan_create(pod("fill"), integer("fill", 6)))  # node 0: 2 free
    e.commit(e.plan_create(pod("db"), integer("db", 2)))
    placed = e.placement("db")
    assert placed is not None
    assert placed.mems == CPUSet((0,))
    pin = pod("io", pins=placed.cpus.format())
    plan = e.plan_create(pin, container("io", pin))
    (move,) = plan.moves
    assert DUAL_SOCKET.numa_nodes_of(move.cpus) == CPUSet((1,))
    assert (move.mems, move.previous_mems) == (CPUSet((1,)), CPUSet((0,)))
    e.commit(plan)
    moved = e.placement("db")
    assert moved is not None
    assert moved.mems == CPUSet((1,))


def test_an_unbound_container_moved_keeps_its_memory_as_it_is() -> None:
    e = engine(MemoryBinding.NONE)
    e.commit(e.plan_create(pod("db"), integer("db", 2)))
    placed = e.placement("db")
    assert placed is not None
    pin = pod("io", pins=placed.cpus.format())
    (move,) = e.plan_create(pin, container("io", pin)).moves
    assert move.mems is None


def test_a_bound_container_resized_across_nodes_gets_both_nodes_memory() -> None:
    e = engine(MemoryBinding.EXCLUSIVE)
    facts = integer("db", 6)
    e.commit(e.plan_create(pod("db"), facts))
    plan = e.plan_resize(pod("db"), replace(facts, cpu_quota=12 * 100_000))
    assert plan.placement is not None
    assert plan.placement.mems == DUAL_SOCKET.numa_nodes_of(plan.placement.cpus) == CPUSet((0, 1))


def test_a_rebuild_binds_what_the_setting_binds_and_unbinds_the_rest() -> None:
    bound, unbound = engine(MemoryBinding.EXCLUSIVE), engine(MemoryBinding.NONE)
    running = replace(integer("db", 2), cpus="0,8", mems="0")
    plan = bound.plan_synchronize([pod("db")], [running])
    assert plan.updates == ()  # its record is already right
    bound.commit(plan)
    assert bound.ledger.entries["db"].mems == CPUSet((0,))
    plan = unbound.plan_synchronize([pod("db")], [running])
    (update,) = plan.updates
    assert update.mems == DUAL_SOCKET.nodes_with_memory()  # back to every node


def test_a_memoryless_nodes_cpu_is_bound_to_its_nearest_memory() -> None:
    e = engine(MemoryBinding.EXCLUSIVE, MEMORYLESS_SECOND_NODE)  # CPU 1 on memoryless node 1
    e.commit(e.plan_synchronize([pod("db")], [replace(integer("db", 1), cpus="1")]))
    entry = e.ledger.entries["db"]
    assert (entry.cpus, entry.mems) == (cpus("1"), CPUSet((0,)))  # node 0: 12 away, node 2: 32
