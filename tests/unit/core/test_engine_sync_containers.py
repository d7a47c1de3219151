"""Synchronize of shared and integer containers: the ledger is rebuilt from what runs, valid
exclusive sets are kept and the others moved.

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.engine import CpusetEngine
from cpuset_core.ledger import Ledger
from cpuset_core.model import Kind
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology
from tests.builders.facts import container, pod
from tests.unit.core.engine_steps import (
    ALL,
    KEY,
    annotated_ctr,
    integer_ctr,
    shared_ctr,
    sync,
    updates_by_id,
)
from tests.unit.core.topologies import DUAL_SOCKET, OFFLINE_ISO, cpus


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
