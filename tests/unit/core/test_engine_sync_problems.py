"""Synchronize of annotated containers and what it reports: pins and mems corrected, invalid,
disallowed or offline pins, too few CPUs, no pool, unknown pods.

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import (
    CpuUnavailableError,
    InsufficientCpusError,
    InvalidAnnotationError,
    NumaResolutionError,
    PinNotAllowedError,
    SharedPoolExhaustedError,
)
from cpuset_core.invariants import violations
from cpuset_core.model import ContainerFacts, Kind
from cpuset_core.settings import Settings
from tests.builders.facts import container, pod
from tests.unit.core.engine_steps import ALL, KEY, sync, updates_by_id
from tests.unit.core.topologies import DUAL_SOCKET, OFFLINE_ISO, cpus, one_cpu_per_node


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
