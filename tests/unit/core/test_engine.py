"""The engine's use cases (create, release, synchronize) as plans over the ledger.

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import (
    AdmissionError,
    CpuUnavailableError,
    InsufficientCpusError,
    InsufficientCpusForReassignmentError,
    InvalidAnnotationError,
    NumaResolutionError,
    PinNotAllowedError,
    SharedPoolBelowMinimumError,
    SharedPoolExhaustedError,
    StalePlanError,
)
from cpuset_core.invariants import violations
from cpuset_core.ledger import Ledger
from cpuset_core.model import ContainerFacts, ContainerUpdate, Kind, Placement, PodFacts
from cpuset_core.plan import Plan
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, Settings
from cpuset_core.topology import Topology
from tests.builders.facts import container, pod, subject
from tests.unit.core.topologies import (
    DUAL_SOCKET,
    MEMORYLESS_SECOND_NODE,
    OFFLINE_ISO,
    cpus,
    one_cpu_per_node,
)

KEY = DEFAULT_PIN_ANNOTATION
ALL = DUAL_SOCKET.online


def admit(engine: CpusetEngine, p: PodFacts, c: ContainerFacts) -> Plan:
    plan = engine.plan_create(p, c)
    engine.commit(plan)
    return plan


def release(engine: CpusetEngine, cid: str) -> Plan:
    plan = engine.plan_release(cid)
    engine.commit(plan)
    return plan


def shared_ctr(engine: CpusetEngine, name: str) -> Plan:
    p = pod(name, qos="burstable")
    return admit(engine, p, container(name, p))


def integer_ctr(engine: CpusetEngine, name: str, count: int) -> Plan:
    p = pod(name)
    return admit(engine, p, container(name, p, cpu_limit=count))


def annotated_ctr(engine: CpusetEngine, name: str, pins: str) -> Plan:
    p = pod(name, qos="burstable", annotations={KEY: pins})
    return admit(engine, p, container(name, p))


def placed(plan: Plan) -> Placement:
    assert plan.placement is not None
    return plan.placement


def updates_by_id(plan: Plan) -> dict[str, ContainerUpdate]:
    ids = [u.container_id for u in plan.updates]
    assert len(ids) == len(set(ids)), "one update per container"
    return {u.container_id: u for u in plan.updates}


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


# -- admission errors --------------------------------------------------------------------------

Scenario = Callable[[], tuple[CpusetEngine, PodFacts, ContainerFacts]]


def offline_pin() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    p = pod("pinned", annotations={KEY: "6-7"})
    return CpusetEngine(OFFLINE_ISO), p, container("c", p)


def unknown_pin() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    p = pod("pinned", annotations={KEY: "0,99"})
    return CpusetEngine(DUAL_SOCKET), p, container("c", p)


def invalid_annotation() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    p = pod("pinned", annotations={KEY: "0-x"})
    return CpusetEngine(DUAL_SOCKET), p, container("c", p)


def too_many_integer_cpus() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "first", 2)
    p = pod("big")
    return engine, p, container("c", p, cpu_limit=15)


def shared_with_everything_reserved() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    annotated_ctr(engine, "all", "0-15")
    p = pod("late", qos="besteffort")
    return engine, p, container("c", p)


def integer_emptying_the_pool() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    p = pod("big")
    return engine, p, container("c", p, cpu_limit=16)


def annotated_emptying_the_pool() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    annotated_ctr(engine, "half", "0-7")
    p = pod("rest", annotations={KEY: "8-15"})
    return engine, p, container("c", p)


def reassignment_without_room() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "small", 2)
    integer_ctr(engine, "rest", 14)
    p = pod("pinned", annotations={KEY: "0"})
    return engine, p, container("c", p)


def pin_from_disallowed_namespace() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET, Settings(pin_namespaces=("weka-*",)))
    p = pod("pinned", annotations={KEY: "0"})
    return engine, p, container("c", p)


def unresolvable_numa() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    topology = one_cpu_per_node(2, memory=cpus("0"), distances={})
    p = pod("pinned", annotations={KEY: "1"})
    return CpusetEngine(topology), p, container("c", p)


@pytest.mark.parametrize(("scenario", "error", "mentions"), [
    (offline_pin, CpuUnavailableError, "CPU(s) 7 that are not online (online: 0-6)"),
    (unknown_pin, CpuUnavailableError, "CPU(s) 99"),
    (invalid_annotation, InvalidAnnotationError, "'0-x'"),
    (too_many_integer_cpus, InsufficientCpusError, "needs 15 exclusive CPU(s) but only 14"),
    (shared_with_everything_reserved, SharedPoolExhaustedError, "shared CPU pool would be empty"),
    (integer_emptying_the_pool, SharedPoolExhaustedError, "1 shared container(s)"),
    (annotated_emptying_the_pool, SharedPoolExhaustedError, "1 shared container(s)"),
    (reassignment_without_room, InsufficientCpusForReassignmentError, "ns/small/main"),
    (unresolvable_numa, NumaResolutionError, "NUMA node 1 has no memory"),
    (pin_from_disallowed_namespace, PinNotAllowedError,
     "namespace 'ns' may not use the annotation weka.io/cores-ids (pin_namespaces allows: "
     "weka-*)"),
], ids=lambda v: getattr(v, "__name__", None))
def test_admission_error_names_the_container_and_changes_nothing(
        scenario: Scenario, error: type[AdmissionError], mentions: str) -> None:
    engine, p, c = scenario()
    before = engine.ledger
    with pytest.raises(error) as caught:
        engine.plan_create(p, c)
    message = str(caught.value)
    assert f"ns/{p.name}/main" in message
    assert caught.value.subject == subject(p)
    assert mentions in message
    assert engine.ledger is before


def test_offline_pin_error_carries_the_unavailable_cpus() -> None:
    engine, p, c = offline_pin()
    with pytest.raises(CpuUnavailableError) as caught:
        engine.plan_create(p, c)
    assert (caught.value.key, caught.value.cpus, caught.value.unavailable) == (KEY, "6-7", "7")


@pytest.mark.parametrize(("held", "request_", "free"), [(0, 17, 16), (2, 15, 14), (10, 7, 6)])
def test_too_many_integer_cpus_reports_requested_and_free(held: int, request_: int,
                                                          free: int) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    if held:
        integer_ctr(engine, "held", held)
    p = pod("big")
    with pytest.raises(InsufficientCpusError) as caught:
        engine.plan_create(p, container("c", p, cpu_limit=request_))
    assert (caught.value.requested, caught.value.free) == (request_, free)


def test_shared_pool_may_be_emptied_by_integer_containers_when_no_shared_container_exists() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    plan = integer_ctr(engine, "all", 16)
    assert placed(plan).cpus == ALL
    assert plan.shared_pool == EMPTY


def test_shared_pool_may_be_emptied_by_pins_when_no_shared_container_exists() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    annotated_ctr(engine, "half", "0-7")
    assert annotated_ctr(engine, "rest", "8-15").shared_pool == EMPTY


def test_shared_container_on_a_machine_whose_only_shared_cpus_are_pinned_is_refused() -> None:
    engine = CpusetEngine(OFFLINE_ISO)  # isolated 2-3 never join the pool
    annotated_ctr(engine, "pin", "0-1,4-6")
    p = pod("late", qos="burstable")
    with pytest.raises(SharedPoolExhaustedError, match="ns/late/main"):
        engine.plan_create(p, container("c", p))


# -- release -----------------------------------------------------------------------------------


def test_release_of_an_unknown_container_is_an_empty_plan() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "db", 2)
    plan = engine.plan_release("nope")
    assert plan.updates == ()
    assert plan.base is engine.ledger
    assert plan.result is engine.ledger
    assert not plan.changes_ledger
    assert (plan.container_id, plan.placement) == (None, None)
    assert plan.shared_pool == engine.shared_pool()


def test_stop_then_remove_releases_exactly_once() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    integer_ctr(engine, "db", 2)
    integer_ctr(engine, "other", 2)
    stop = release(engine, "db")
    after_stop = engine.ledger
    assert len(stop.updates) == 1
    remove = release(engine, "db")
    assert remove.updates == ()
    assert engine.ledger is after_stop
    assert "other" in engine.ledger
    assert engine.shared_pool() == ALL - engine.ledger.exclusive


def test_releasing_a_shared_container_updates_nobody() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s1")
    shared_ctr(engine, "s2")
    plan = release(engine, "s1")
    assert plan.updates == ()
    assert engine.ledger.shared_ids() == ("s2",)


# -- re-creating an id -------------------------------------------------------------------------


def test_recreating_an_integer_container_replaces_its_entry() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    p = pod("db")
    admit(engine, p, container("db", p, cpu_limit=2))
    plan = admit(engine, p, container("db", p, cpu_limit=4))
    assert len(engine.ledger) == 1
    entry = engine.ledger.entries["db"]
    assert (entry.request, len(entry.cpus)) == (4, 4)
    assert engine.ledger.exclusive == placed(plan).cpus


def test_recreating_an_annotated_container_releases_its_old_pins() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    annotated_ctr(engine, "pin", "0-1")
    annotated_ctr(engine, "pin", "4-5")
    assert engine.ledger.pinned == cpus("4-5")
    assert dict(engine.ledger.annot_refs) == {4: 1, 5: 1}


def test_recreating_an_id_with_another_kind_drops_the_old_reservation() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "x", 2)
    p = pod("x", qos="burstable")
    admit(engine, p, container("x", p))
    assert engine.ledger.exclusive == EMPTY
    assert engine.ledger.shared_ids() == ("x",)


def test_recreating_an_integer_container_sends_updates_with_the_true_previous_cpus() -> None:
    """Regression: the pool 'before' came from the ledger without the re-created container, so
    the shared container's update named previous_cpus=0-15 (a rollback would have put it on the
    integer container's exclusive CPUs)."""
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    p = pod("db")
    admit(engine, p, container("db", p, cpu_limit=2))
    running = engine.shared_pool()
    plan = engine.plan_create(p, container("db", p, cpu_limit=2))
    assert all(u.previous_cpus == running for u in plan.updates)


# -- commit ------------------------------------------------------------------------------------


def test_committing_a_stale_plan_raises_and_keeps_the_newer_ledger() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    p1, p2 = pod("one"), pod("two")
    first = engine.plan_create(p1, container("one", p1, cpu_limit=2))
    second = engine.plan_create(p2, container("two", p2, cpu_limit=2))
    engine.commit(first)
    with pytest.raises(StalePlanError):
        engine.commit(second)
    assert engine.ledger is first.result


def test_committing_the_same_plan_twice_is_stale() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    plan = integer_ctr(engine, "db", 2)
    with pytest.raises(StalePlanError):
        engine.commit(plan)


def test_an_uncommitted_plan_changes_nothing() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    before = engine.ledger
    p = pod("db")
    plan = engine.plan_create(p, container("db", p, cpu_limit=2))
    assert plan.changes_ledger
    assert engine.ledger is before
    assert engine.placement("db") is None


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


# -- synchronize -------------------------------------------------------------------------------


def sync(engine: CpusetEngine, pods: Sequence[PodFacts],
         containers: Sequence[ContainerFacts]) -> Plan:
    plan = engine.plan_synchronize(pods, containers)
    engine.commit(plan)
    assert violations(engine.topology, engine.ledger, engine.settings) == []
    return plan


def test_synchronize_rebuilds_from_scratch_ignoring_the_previous_ledger() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    integer_ctr(engine, "db", 2)
    annotated_ctr(engine, "pin", "4")
    p = pod("fresh", qos="burstable")
    plan = sync(engine, [p], [container("fresh", p, cpus_now="0-15")])
    assert plan.base is not plan.result
    assert set(engine.ledger.entries) == {"fresh"}
    assert engine.ledger.reserved == EMPTY
    assert plan.updates == ()


def test_synchronize_with_nothing_running_gives_an_empty_ledger() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "db", 2)
    plan = sync(engine, [], [])
    assert engine.ledger == Ledger()
    assert (plan.updates, plan.problems) == ((), ())


@pytest.mark.parametrize("cpus_now", ["", "0-15"])
def test_shared_containers_started_before_the_plugin_are_moved_to_the_pool(cpus_now: str) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    web, db, pin = pod("web", qos="burstable"), pod("db"), pod("pin", annotations={KEY: "7"})
    plan = sync(engine, [web, db, pin], [container("web", web, cpus_now=cpus_now),
                                         container("db", db, cpu_limit=2),
                                         container("pin", pin)])
    pool = ALL - engine.ledger.reserved
    assert len(pool) == 13
    assert plan.shared_pool == pool
    update = updates_by_id(plan)["web"]
    assert (update.kind, update.cpus, update.previous_cpus) == (Kind.SHARED, pool, ALL)
    assert update.mems is None


def test_shared_container_already_on_the_pool_is_left_alone() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    web = pod("web", qos="burstable")
    assert sync(engine, [web], [container("web", web, cpus_now="0-15")]).updates == ()


def test_integer_container_with_a_valid_exclusive_set_keeps_it() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    db = pod("db")
    plan = sync(engine, [db], [container("db", db, cpu_limit=2, cpus_now="5,13",
                                         mems_now="0-1")])
    assert engine.ledger.entries["db"].cpus == cpus("5,13")
    assert plan.updates == ()


def test_integer_container_keeps_its_set_when_shared_containers_run_on_the_pool() -> None:
    """A plugin restart: the shared container already runs on the pool without 5,13."""
    engine = CpusetEngine(DUAL_SOCKET)
    db, web = pod("db"), pod("web", qos="burstable")
    plan = sync(engine, [db, web], [container("db", db, cpu_limit=2, cpus_now="5,13"),
                                    container("web", web, cpus_now="0-4,6-12,14-15")])
    assert engine.ledger.entries["db"].cpus == cpus("5,13")
    assert plan.updates == ()


def test_integer_container_whose_set_a_managed_shared_container_also_runs_on_moves() -> None:
    """A shared container explicitly set to the integer's CPUs: that set is not exclusive."""
    engine = CpusetEngine(DUAL_SOCKET)
    db, web = pod("db"), pod("web", qos="burstable")
    plan = sync(engine, [db, web], [container("db", db, cpu_limit=2, cpus_now="5,13"),
                                    container("web", web, cpus_now="4-7,12-15")])
    moved = engine.ledger.entries["db"].cpus
    assert moved.isdisjoint(cpus("4-7,12-15"))
    assert updates_by_id(plan)["db"].previous_cpus == cpus("5,13")


@pytest.mark.parametrize("web_now", ["", "0-15"])
def test_integer_container_keeps_its_set_when_an_unmanaged_shared_container_exists(
        web_now: str) -> None:
    """Regression: a shared container reporting no cpuset (or the whole machine) was taken as
    claiming every CPU, so every valid integer container was needlessly live-moved."""
    engine = CpusetEngine(DUAL_SOCKET)
    db, web = pod("db"), pod("web", qos="burstable")
    plan = sync(engine, [db, web], [container("db", db, cpu_limit=2, cpus_now="5,13"),
                                    container("web", web, cpus_now=web_now)])
    assert engine.ledger.entries["db"].cpus == cpus("5,13")
    assert "db" not in updates_by_id(plan)
    assert updates_by_id(plan)["web"].cpus == ALL - cpus("5,13")


@pytest.mark.parametrize("cpus_now", ["", "5", "5,13,6", "0-15", "not-a-list"])
def test_integer_container_with_an_invalid_set_gets_new_exclusive_cpus(cpus_now: str) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    db = pod("db")
    plan = sync(engine, [db], [container("db", db, cpu_limit=2, cpus_now=cpus_now)])
    entry = engine.ledger.entries["db"]
    assert entry.cpus == cpus("0,8")
    update = updates_by_id(plan)["db"]
    assert (update.kind, update.cpus) == (Kind.INTEGER, cpus("0,8"))
    assert plan.problems == ()


def test_integer_containers_reporting_the_same_cpus_keep_them_in_id_order() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    a, b = pod("a"), pod("b")
    plan = sync(engine, [a, b], [container("b", b, cpu_limit=2, cpus_now="5,13"),
                                 container("a", a, cpu_limit=2, cpus_now="5,13")])
    assert engine.ledger.entries["a"].cpus == cpus("5,13")
    moved = engine.ledger.entries["b"].cpus
    assert len(moved) == 2
    assert moved.isdisjoint(cpus("5,13"))
    assert set(updates_by_id(plan)) == {"b"}


def test_integer_container_overlapping_a_pin_gets_new_cpus() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    db, pin = pod("db"), pod("pin", annotations={KEY: "5"})
    sync(engine, [db, pin], [container("db", db, cpu_limit=2, cpus_now="5,13"),
                             container("pin", pin, cpus_now="5", mems_now="1")])
    assert 5 not in engine.ledger.entries["db"].cpus
    assert engine.ledger.entries["pin"].cpus == cpus("5")


@pytest.mark.parametrize(("topology", "config", "cpus_now"), [
    (OFFLINE_ISO, Settings(), "2,6"),
    (DUAL_SOCKET, Settings(system_reserved=cpus("5")), "5,13"),
], ids=["on-isolated", "on-system-reserved"])
def test_integer_container_on_forbidden_cpus_gets_new_cpus(topology: Topology, config: Settings,
                                                           cpus_now: str) -> None:
    engine = CpusetEngine(topology, config)
    db = pod("db")
    sync(engine, [db], [container("db", db, cpu_limit=2, cpus_now=cpus_now)])
    assert engine.ledger.entries["db"].cpus.isdisjoint(cpus(cpus_now))


@pytest.mark.parametrize(("cpus_now", "mems_now", "needs_update"), [
    ("", "", True),
    ("0-15", "0-1", True),
    ("3-4", "", True),
    ("3-4", "0", True),
    ("3-4", "0-1", False),
])
def test_annotated_container_is_corrected_when_pins_or_mems_differ(
        cpus_now: str, mems_now: str, needs_update: bool) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    pin = pod("pin", annotations={KEY: "3-4"})
    plan = sync(engine, [pin], [container("pin", pin, cpus_now=cpus_now, mems_now=mems_now)])
    updates = updates_by_id(plan)
    assert ("pin" in updates) is needs_update
    if needs_update:
        update = updates["pin"]
        assert (update.kind, update.cpus, update.mems) == (Kind.ANNOTATED, cpus("3-4"),
                                                          cpus("0-1"))
        # An unset mems is written as every memory node, so a rollback can put it back.
        assert update.previous_mems == (cpus(mems_now) if mems_now
                                        else DUAL_SOCKET.nodes_with_memory())


def test_invalid_annotation_at_synchronize_is_a_problem_and_the_container_is_shared() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    bad = pod("bad", annotations={KEY: "1-"})
    plan = sync(engine, [bad], [container("bad", bad, name="app", cpus_now="")])
    (problem,) = plan.problems
    assert isinstance(problem, InvalidAnnotationError)
    assert "ns/bad/app" in str(problem)
    assert engine.ledger.entries["bad"].kind is Kind.SHARED
    assert updates_by_id(plan)["bad"].cpus == ALL


def test_disallowed_pin_at_synchronize_is_a_problem_and_the_container_is_shared() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(pin_namespaces=("weka",)))
    pinned = pod("pinned", annotations={KEY: "1"})
    plan = sync(engine, [pinned], [container("pinned", pinned, name="app", cpus_now="1",
                                             mems_now="0")])
    (problem,) = plan.problems
    assert isinstance(problem, PinNotAllowedError)
    assert engine.ledger.entries["pinned"].kind is Kind.SHARED
    assert engine.ledger.reserved == EMPTY
    update = updates_by_id(plan)["pinned"]
    assert update.cpus == ALL
    # No longer pinned: no longer tied to its old node's memory either (found in review).
    assert (update.mems, update.previous_mems) == (cpus("0-1"), cpus("0"))


def test_offline_pin_at_synchronize_is_a_problem_and_the_online_part_is_pinned() -> None:
    engine = CpusetEngine(OFFLINE_ISO)
    pin = pod("pin", annotations={KEY: "6-7"})
    plan = sync(engine, [pin], [container("pin", pin)])
    (problem,) = plan.problems
    assert isinstance(problem, CpuUnavailableError)
    assert problem.unavailable == "7"
    assert "ns/pin/main" in str(problem)
    entry = engine.ledger.entries["pin"]
    assert (entry.kind, entry.cpus, entry.mems) == (Kind.ANNOTATED, cpus("6"), cpus("0"))


def test_pins_that_are_all_offline_at_synchronize_leave_the_container_shared() -> None:
    engine = CpusetEngine(OFFLINE_ISO)
    pin = pod("pin", annotations={KEY: "7"})
    plan = sync(engine, [pin], [container("pin", pin)])
    assert [type(p) for p in plan.problems] == [CpuUnavailableError]
    assert engine.ledger.entries["pin"].kind is Kind.SHARED


def test_not_enough_cpus_at_synchronize_is_a_problem_and_the_container_stays_shared() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    a, b = pod("a"), pod("b")
    plan = sync(engine, [a, b], [container("a", a, cpu_limit=10),
                                 container("b", b, cpu_limit=10)])
    (problem,) = plan.problems
    assert isinstance(problem, InsufficientCpusError)
    assert (problem.requested, problem.free) == (10, 6)
    assert "ns/b/main" in str(problem)
    assert engine.ledger.entries["a"].kind is Kind.INTEGER
    assert engine.ledger.entries["b"].kind is Kind.SHARED
    assert updates_by_id(plan)["b"].cpus == ALL - engine.ledger.entries["a"].cpus


def test_integer_container_that_would_empty_the_pool_at_synchronize_stays_shared() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    db, web = pod("db"), pod("web", qos="burstable")
    plan = sync(engine, [db, web], [container("db", db, cpu_limit=16),
                                    container("web", web)])
    (problem,) = plan.problems
    assert isinstance(problem, SharedPoolExhaustedError)
    assert "ns/db/main" in str(problem)
    assert engine.ledger.entries["db"].kind is Kind.SHARED


def test_shared_containers_with_no_pool_at_synchronize_are_left_alone_and_reported() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    pin, web = pod("pin", annotations={KEY: "0-15"}), pod("web", qos="burstable")
    plan = engine.plan_synchronize([pin, web], [
        container("pin", pin, cpus_now="0-15", mems_now="0-1"),
        container("web", web, cpus_now="0-15")])
    engine.commit(plan)
    (problem,) = plan.problems
    assert isinstance(problem, SharedPoolExhaustedError)
    assert "ns/web/main" in str(problem)
    assert plan.updates == ()
    # Nothing can repair this state: the invariants say so rather than hide it.
    assert [v[:2] for v in violations(DUAL_SOCKET, engine.ledger, engine.settings)] == ["7:"]


def test_unresolvable_numa_at_synchronize_is_a_problem_and_mems_are_left_alone() -> None:
    engine = CpusetEngine(one_cpu_per_node(2, memory=cpus("0"), distances={}))
    pin = pod("pin", annotations={KEY: "1"})
    plan = sync(engine, [pin], [container("pin", pin)])
    (problem,) = plan.problems
    assert isinstance(problem, NumaResolutionError)
    entry = engine.ledger.entries["pin"]
    assert (entry.cpus, entry.mems) == (cpus("1"), None)


def test_container_whose_pod_is_unknown_is_shared() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    orphan = ContainerFacts(id="x", sandbox_id="gone", name="lost", cpu_quota=200_000,
                            cpu_period=100_000)
    sync(engine, [], [orphan])
    entry = engine.ledger.entries["x"]
    assert (entry.kind, entry.subject) == (Kind.SHARED, "?/?/lost")


OLD_POOL = "3,5-11,13-15"


def mixed_machine() -> tuple[list[PodFacts], list[ContainerFacts]]:
    """A busy node after a plugin restart: annotated, integer (valid, clashing, on a pin,
    unset), shared (on the old pool), and broken containers."""
    pin_a = pod("pin-a", annotations={KEY: "0-1"})
    pin_b = pod("pin-b", annotations={KEY: "1-2"})
    bad = pod("bad", annotations={KEY: "x"})
    db1, db2, db3, db4 = pod("db1"), pod("db2"), pod("db3"), pod("db4")
    web1, web2 = pod("web1", qos="burstable"), pod("web2", qos="besteffort")
    mixed = pod("mixed")
    pods = [pin_a, pin_b, bad, db1, db2, db3, db4, web1, web2, mixed]
    containers = [
        container("c-pin-a", pin_a, cpus_now="0-1", mems_now="0"),
        container("c-pin-b", pin_b),
        container("c-bad", bad, cpus_now=OLD_POOL),
        container("c-db1", db1, cpu_limit=2, cpus_now="4,12"),
        container("c-db2", db2, cpu_limit=2, cpus_now="4,12"),
        container("c-db3", db3, cpu_limit=3),
        container("c-db4", db4, cpu_limit=2, cpus_now="1,9"),
        container("c-web1", web1, cpus_now=OLD_POOL),
        container("c-web2", web2, cpus_now=OLD_POOL),
        container("c-mixed-int", mixed, cpu_limit=1, name="worker"),
        container("c-mixed-frac", mixed, cpu_limit=0.5, name="sidecar", cpus_now=OLD_POOL),
    ]
    return pods, containers


def test_synchronize_of_a_busy_machine_places_everyone_consistently() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    pods, containers = mixed_machine()
    plan = sync(engine, pods, containers)
    ledger = engine.ledger
    assert ledger.pinned == cpus("0-2")
    assert ledger.annot_refs[1] == 2
    assert ledger.entries["c-db1"].cpus == cpus("4,12")  # kept
    assert ledger.entries["c-db2"].cpus.isdisjoint(cpus("4,12"))  # clashed
    assert ledger.entries["c-db4"].cpus.isdisjoint(cpus("1"))  # overlapped a pin
    assert ledger.entries["c-mixed-int"].kind is Kind.INTEGER
    assert ledger.entries["c-mixed-frac"].kind is Kind.SHARED
    assert ledger.entries["c-bad"].kind is Kind.SHARED
    assert [type(p) for p in plan.problems] == [InvalidAnnotationError]
    assert "c-db1" not in updates_by_id(plan)
    for update in plan.updates:
        assert update.cpus == (engine.placement(update.container_id) or
                               pytest.fail("update for an unknown container")).cpus


def test_synchronize_is_deterministic_whatever_the_input_order() -> None:
    pods, containers = mixed_machine()
    reference = CpusetEngine(DUAL_SOCKET).plan_synchronize(pods, containers)
    for shift in range(len(containers)):
        shuffled_pods = (pods[shift % len(pods):] + pods[:shift % len(pods)])[::-1]
        shuffled_containers = containers[shift:] + containers[:shift]
        if shift % 2:
            shuffled_containers.reverse()
        plan = CpusetEngine(DUAL_SOCKET).plan_synchronize(shuffled_pods, shuffled_containers)
        assert plan.result == reference.result
        assert plan.updates == reference.updates
        assert [str(p) for p in plan.problems] == [str(p) for p in reference.problems]


def test_synchronize_then_create_and_release_keep_the_invariants() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    pods, containers = mixed_machine()
    sync(engine, pods, containers)
    release(engine, "c-db1")
    integer_ctr(engine, "late-db", 2)
    annotated_ctr(engine, "late-pin", "0")
    assert violations(DUAL_SOCKET, engine.ledger, engine.settings) == []
    assert engine.placement("c-web1") == Placement(kind=Kind.SHARED, cpus=engine.shared_pool())


def test_synchronize_problems_name_their_containers() -> None:
    engine = CpusetEngine(OFFLINE_ISO)
    bad, off, big = (pod("bad", annotations={KEY: "?"}), pod("off", annotations={KEY: "7"}),
                     pod("big"))
    plan = engine.plan_synchronize([bad, off, big], [container("c1", bad, name="a"),
                                                     container("c2", off, name="b"),
                                                     container("c3", big, name="c",
                                                               cpu_limit=8)])
    messages = sorted(str(p) for p in plan.problems)
    assert len(messages) == 3
    for p, name in ((bad, "a"), (off, "b"), (big, "c")):
        assert any(subject(p, name) in m for m in messages)


def test_demoted_integer_container_at_synchronize_makes_room_by_demoting_the_latest_admitted(
) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    a, b, c = pod("a"), pod("b"), pod("c")
    plan = sync(engine, [a, b, c], [container("a", a, cpu_limit=10, cpus_now="0-4,8-12"),
                                    container("b", b, cpu_limit=6, cpus_now="5-7,13-15"),
                                    container("c", c, cpu_limit=4, cpus_now="")])
    kinds = {cid: engine.ledger.entries[cid].kind for cid in "abc"}
    assert kinds == {"a": Kind.INTEGER, "b": Kind.SHARED, "c": Kind.SHARED}
    assert engine.ledger.entries["a"].cpus == cpus("0-4,8-12")
    assert [type(p) for p in plan.problems] == [InsufficientCpusError, SharedPoolExhaustedError]
    assert "ns/b/main" in str(plan.problems[1])
    assert plan.shared_pool == cpus("5-7,13-15")


def test_release_never_fails_when_synchronize_left_the_pool_empty() -> None:
    """Pins covering every CPU while a shared container runs is a state synchronize reports;
    releasing one of two identical pins must still succeed."""
    engine = CpusetEngine(DUAL_SOCKET)
    a = pod("a", annotations={KEY: "0-15"})
    b = pod("b", annotations={KEY: "0-15"})
    web = pod("web", qos="burstable")
    plan = engine.plan_synchronize(
        [a, b, web], [container("a", a, cpus_now="0-15"), container("b", b, cpus_now="0-15"),
                      container("web", web, cpus_now="")])
    assert any(p.reason == "shared-pool-exhausted" for p in plan.problems)
    engine.commit(plan)
    release = engine.plan_release("a")
    engine.commit(release)
    assert "a" not in engine.ledger


# -- in-place resize -----------------------------------------------------------------------


def _integer(engine: CpusetEngine, name: str, count: int) -> None:
    p = pod(name)
    engine.commit(engine.plan_create(p, container(name, p, cpu_limit=count)))


@pytest.mark.parametrize(("before", "after"), [(4, 2), (4, 1), (3, 2)])
def test_shrinking_an_integer_container_keeps_whole_cores_of_its_own_cpus(
        before: int, after: int) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    _integer(engine, "db", before)
    old = engine.ledger.entries["db"].cpus
    p = pod("db")
    plan = engine.plan_resize(p, container("db", p, cpu_limit=after))
    engine.commit(plan)
    new = engine.ledger.entries["db"].cpus
    assert new <= old
    assert len(new) == after
    assert len(DUAL_SOCKET.cores_within(new)) == (after + 1) // 2
    assert violations(DUAL_SOCKET, engine.ledger, engine.settings) == []


def test_growing_keeps_the_current_cpus_and_stays_on_the_node() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    _integer(engine, "db", 2)
    old = engine.ledger.entries["db"].cpus
    p = pod("db")
    plan = engine.plan_resize(p, container("db", p, cpu_limit=6))
    assert plan.placement is not None
    assert plan.placement.cpus >= old
    assert plan.placement.cpus <= DUAL_SOCKET.cpus_of_numa(0)
    assert "grown from 2" in plan.reason


def test_pinned_and_same_size_resizes_change_nothing() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    io = pod("io", annotations={KEY: "3"})
    engine.commit(engine.plan_create(io, container("io", io)))
    _integer(engine, "db", 2)
    ledger = engine.ledger
    assert engine.plan_resize(io, container("io", io, cpu_limit=4)).result is ledger
    db = pod("db")
    same = engine.plan_resize(db, container("db", db, cpu_limit=2))
    assert same.result is ledger
    assert same.placement is not None
    assert same.placement.cpus == ledger.entries["db"].cpus


# -- minimum shared pool ---------------------------------------------------------------------


def test_an_admission_that_would_shrink_the_pool_below_the_minimum_is_refused() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=12))
    _integer(engine, "db", 4)  # pool 16 -> 12: allowed
    ledger = engine.ledger
    p = pod("more")
    with pytest.raises(SharedPoolBelowMinimumError, match="below the configured minimum of 12"):
        engine.plan_create(p, container("more", p, cpu_limit=2))
    io = pod("io", annotations={KEY: "15"})
    with pytest.raises(SharedPoolBelowMinimumError, match="min_shared_pool"):
        engine.plan_create(io, container("io", io))
    assert engine.ledger is ledger


def test_the_minimum_allows_a_change_that_keeps_the_pool_and_every_release() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=12))
    a = pod("a", annotations={KEY: "15"})
    engine.commit(engine.plan_create(a, container("a", a)))   # pool 16 -> 15
    _integer(engine, "db", 3)                                   # pool 15 -> 12
    b = pod("b", annotations={KEY: "15"})
    engine.commit(engine.plan_create(b, container("b", b)))   # shares CPU 15: pool stays 12
    assert len(engine.shared_pool()) == 12
    engine.commit(engine.plan_release("db"))
    assert len(engine.shared_pool()) == 15


def test_synchronize_reports_a_pool_below_the_minimum() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=14))
    db = pod("db")
    plan = engine.plan_synchronize([db], [container("db", db, cpu_limit=4, cpus_now="0-1,8-9")])
    assert any(p.reason == "shared-pool-below-minimum" and "minimum of 14" in str(p)
               for p in plan.problems)
    empty = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=20)).plan_synchronize([], [])
    assert empty.problems == ()  # nothing reserved: a configuration matter, not a problem


def test_a_negative_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="min_shared_pool must be >= 0"):
        Settings(min_shared_pool=-1)


# -- reconfigure -------------------------------------------------------------------------------


def test_reconfigure_applies_live_settings_to_later_decisions_only() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    first = annotated_ctr(engine, "first", "0")
    engine.reconfigure(Settings(pin_namespaces=("weka",), min_shared_pool=2))
    assert engine.settings.pin_namespaces == ("weka",)
    assert engine.placement(first.container_id or "") is not None
    p = pod("second", annotations={KEY: "1"})
    with pytest.raises(PinNotAllowedError):
        engine.plan_create(p, container("second", p))


@pytest.mark.parametrize(("change", "named"), [
    (Settings(system_reserved=cpus("0")), "system_reserved"),
    (Settings(strict_reservation=True), "strict_reservation"),
    (Settings(exclusive_on_isolated=True), "exclusive_on_isolated"),
    (Settings(pin_annotation="example.com/pin", system_reserved=cpus("1")),
     "pin_annotation, system_reserved"),
])
def test_reconfigure_refuses_settings_that_need_a_restart(change: Settings, named: str) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    before = engine.settings
    with pytest.raises(ValueError, match=f"^{named} cannot change while running"):
        engine.reconfigure(change)
    assert engine.settings is before
