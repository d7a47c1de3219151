"""Releasing containers, re-creating an id and committing plans (stale and uncommitted plans).

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import StalePlanError
from tests.builders.facts import container, pod
from tests.unit.core.engine_steps import (
    ALL,
    admit,
    annotated_ctr,
    integer_ctr,
    placed,
    release,
    shared_ctr,
)
from tests.unit.core.topologies import DUAL_SOCKET, cpus

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
