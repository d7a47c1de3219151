"""Creating containers with the engine: shared ones run on the pool, integer ones get
exclusive CPUs, annotated ones get their pins; reserved and isolated CPUs stay out of the pool.

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import InsufficientCpusError
from cpuset_core.invariants import violations
from cpuset_core.model import Kind, Placement
from cpuset_core.settings import Settings
from tests.builders.facts import container, pod
from tests.unit.core.engine_steps import (
    ALL,
    annotated_ctr,
    integer_ctr,
    placed,
    release,
    shared_ctr,
)
from tests.unit.core.topologies import DUAL_SOCKET, MEMORYLESS_SECOND_NODE, OFFLINE_ISO, cpus

# -- shared ------------------------------------------------------------------------------------


def test_shared_container_runs_on_online_minus_reserved_minus_isolated() -> None:
    engine = CpusetEngine(OFFLINE_ISO)  # online 0-6, isolated 2-3
    plan = shared_ctr(engine, "web")
    assert placed(plan) == Placement(kind=Kind.SHARED, cpus=cpus("0-1,4-6"))
    assert plan.shared_pool == cpus("0-1,4-6")
    assert plan.updates == ()
    assert engine.placement("web") == placed(plan)


def test_shared_container_avoids_pinned_and_exclusive_cpus() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    annotated_ctr(engine, "pin", "0-1")
    exclusive = placed(integer_ctr(engine, "int", 2)).cpus
    plan = shared_ctr(engine, "web")
    assert placed(plan).cpus == ALL - cpus("0-1") - exclusive
    assert plan.updates == ()


def test_new_shared_container_does_not_update_the_others() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s1")
    assert shared_ctr(engine, "s2").updates == ()


# -- integer -----------------------------------------------------------------------------------


def test_integer_container_gets_exclusive_cpus_and_every_shared_container_shrinks() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s1")
    shared_ctr(engine, "s2")
    plan = integer_ctr(engine, "db", 2)

    assert placed(plan) == Placement(kind=Kind.INTEGER, cpus=cpus("0,8"), mems=None)
    assert plan.shared_pool == ALL - cpus("0,8")
    assert [u.container_id for u in plan.updates] == ["s1", "s2"]
    for update, name in zip(plan.updates, ["s1", "s2"], strict=True):
        assert update.kind is Kind.SHARED
        assert update.subject == f"ns/{name}/main"
        assert update.cpus == ALL - cpus("0,8")
        assert update.previous_cpus == ALL
        assert update.mems is None
    assert engine.placement("s1") == Placement(kind=Kind.SHARED, cpus=ALL - cpus("0,8"))
    assert engine.ledger.int_owner[0] == "db"


def test_integer_containers_get_disjoint_cpus_and_updates_chain_previous_pools() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    first = placed(integer_ctr(engine, "a", 2)).cpus
    plan = integer_ctr(engine, "b", 3)
    second = placed(plan).cpus
    assert first.isdisjoint(second)
    assert len(second) == 3
    (update,) = plan.updates
    assert update.previous_cpus == ALL - first
    assert update.cpus == ALL - first - second


def test_releasing_an_integer_container_grows_the_shared_pool_back() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    integer_ctr(engine, "db", 2)
    plan = release(engine, "db")
    (update,) = plan.updates
    assert (update.container_id, update.cpus, update.previous_cpus) == ("s", ALL,
                                                                         ALL - cpus("0,8"))
    assert plan.placement is None
    assert "db" not in engine.ledger
    assert engine.shared_pool() == ALL


# -- annotated ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("pins", "mems"), [
    ("1-2", "0"), ("9", "0"), ("3-4", "0-1"), ("0,15", "0-1"), ("0-15", "0-1"),
])
def test_annotated_container_gets_exactly_its_pins_and_their_numa_nodes(pins: str,
                                                                       mems: str) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    plan = annotated_ctr(engine, "pin", pins)
    assert placed(plan) == Placement(kind=Kind.ANNOTATED, cpus=cpus(pins), mems=cpus(mems))
    assert engine.placement("pin") == placed(plan)


def test_annotated_container_may_pin_isolated_cpus() -> None:
    engine = CpusetEngine(OFFLINE_ISO)
    assert placed(annotated_ctr(engine, "pin", "2-3")).cpus == cpus("2-3")


def test_annotated_container_shrinks_the_shared_pool() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    (update,) = annotated_ctr(engine, "pin", "4-5").updates
    assert (update.cpus, update.previous_cpus) == (ALL - cpus("4-5"), ALL)


def test_annotated_container_on_a_memoryless_node_gets_the_nearest_memory() -> None:
    engine = CpusetEngine(MEMORYLESS_SECOND_NODE)
    assert placed(annotated_ctr(engine, "pin", "1")).mems == cpus("0")


@pytest.mark.parametrize("release_first", ["a", "b"])
def test_annotated_pods_sharing_cpus_keep_them_reserved_until_the_last_is_released(
        release_first: str) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    annotated_ctr(engine, "a", "0-3")
    plan_b = annotated_ctr(engine, "b", "2-5")
    (update,) = plan_b.updates
    assert (update.previous_cpus, update.cpus) == (ALL - cpus("0-3"), ALL - cpus("0-5"))
    assert dict(engine.ledger.annot_refs) == {0: 1, 1: 1, 2: 2, 3: 2, 4: 1, 5: 1}

    release(engine, release_first)
    still_pinned = cpus("2-5") if release_first == "a" else cpus("0-3")
    assert engine.ledger.pinned == still_pinned
    assert engine.shared_pool() == ALL - still_pinned
    assert all(engine.ledger.annot_refs[cpu] == 1 for cpu in still_pinned)

    plan = release(engine, "b" if release_first == "a" else "a")
    assert engine.ledger.pinned == EMPTY
    assert engine.shared_pool() == ALL
    (update,) = plan.updates
    assert update.cpus == ALL


def test_releasing_one_of_two_identical_pins_changes_no_container() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    annotated_ctr(engine, "a", "6-7")
    annotated_ctr(engine, "b", "6-7")
    plan = release(engine, "a")
    assert plan.updates == ()
    assert plan.changes_ledger


# -- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_system_reserved_cpus_are_never_exclusive_and_shared_unless_strict(strict: bool) -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(system_reserved=cpus("0,8"),
                                                strict_reservation=strict))
    shared_ctr(engine, "s")
    exclusive = placed(integer_ctr(engine, "db", 2)).cpus
    assert exclusive == cpus("1,9")
    expected_pool = ALL - exclusive - (cpus("0,8") if strict else EMPTY)
    assert engine.shared_pool() == expected_pool
    assert engine.placement("s") == Placement(kind=Kind.SHARED, cpus=expected_pool)


def test_system_reserved_cpus_do_not_count_as_free_for_integer_containers() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(system_reserved=cpus("0-13")))
    p = pod("db")
    with pytest.raises(InsufficientCpusError) as caught:
        engine.plan_create(p, container("db", p, cpu_limit=3))
    assert caught.value.free == 2


def test_system_reserved_cpus_may_still_be_pinned() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(system_reserved=cpus("0-1")))
    assert placed(annotated_ctr(engine, "pin", "0")).cpus == cpus("0")


@pytest.mark.parametrize("exclusive_on_isolated", [False, True])
def test_isolated_cpus_never_join_the_pool(exclusive_on_isolated: bool) -> None:
    engine = CpusetEngine(OFFLINE_ISO, Settings(exclusive_on_isolated=exclusive_on_isolated))
    assert engine.shared_pool() == cpus("0-1,4-6")
    shared_ctr(engine, "s")
    assert engine.placement("s") == Placement(kind=Kind.SHARED, cpus=cpus("0-1,4-6"))


def test_isolated_cpus_are_not_exclusive_by_default() -> None:
    engine = CpusetEngine(OFFLINE_ISO)  # online 0-6, isolated 2-3
    assert placed(integer_ctr(engine, "a", 5)).cpus == cpus("0-1,4-6")
    p = pod("b")
    with pytest.raises(InsufficientCpusError) as caught:
        engine.plan_create(p, container("b", p, cpu_limit=1))
    assert caught.value.free == 0


def test_isolated_cpus_are_exclusive_when_allowed() -> None:
    engine = CpusetEngine(OFFLINE_ISO, Settings(exclusive_on_isolated=True))
    taken = placed(integer_ctr(engine, "a", 7)).cpus
    assert taken == OFFLINE_ISO.online
    assert violations(OFFLINE_ISO, engine.ledger, engine.settings) == []


def test_strict_reservation_with_isolated_cpus_leaves_both_out_of_the_pool() -> None:
    engine = CpusetEngine(OFFLINE_ISO, Settings(system_reserved=cpus("0"),
                                                strict_reservation=True))
    assert engine.shared_pool() == cpus("1,4-6")
