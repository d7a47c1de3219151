"""Live reassignment through the engine: an annotated pin on CPUs an integer container owns
moves that container to whole cores on its node, or is refused naming it.

DUAL_SOCKET: node 0 = 0-3,8-11, node 1 = 4-7,12-15; CPU n and n+8 are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import InsufficientCpusForReassignmentError, SharedPoolExhaustedError
from cpuset_core.invariants import violations
from cpuset_core.model import Kind
from cpuset_core.plan import Plan
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, Settings
from tests.builders.facts import container, pod
from tests.unit.core.reassign_steps import ALL, owned
from tests.unit.core.topologies import DUAL_SOCKET, NO_SMT, cpus

KEY = DEFAULT_PIN_ANNOTATION
NODE0 = DUAL_SOCKET.cpus_of_numa(0)
NODE1 = DUAL_SOCKET.cpus_of_numa(1)


def admit_integer(engine: CpusetEngine, name: str, count: int) -> Plan:
    p = pod(name)
    plan = engine.plan_create(p, container(name, p, cpu_limit=count))
    engine.commit(plan)
    return plan


def admit_shared(engine: CpusetEngine, name: str) -> None:
    p = pod(name, qos="burstable")
    engine.commit(engine.plan_create(p, container(name, p)))


def plan_pin(engine: CpusetEngine, name: str, pins: str) -> Plan:
    p = pod(name, qos="burstable", annotations={KEY: pins})
    return engine.plan_create(p, container(name, p))


# -- through the engine ------------------------------------------------------------------------


def test_pin_on_an_integer_cpu_moves_that_container_to_a_whole_core_not_beside_the_pin() -> None:
    """Keeping CPU 8 and topping up would leave the container on two half-cores next to the
    pin's threads; a free whole core on its node shares no core with anyone, so it wins."""
    engine = CpusetEngine(DUAL_SOCKET)
    admit_shared(engine, "web")
    assert admit_integer(engine, "db", 2).placement is not None
    assert engine.ledger.entries["db"].cpus == cpus("0,8")

    plan = plan_pin(engine, "pin", "0")
    engine.commit(plan)

    moved = engine.ledger.entries["db"]
    assert moved.cpus == DUAL_SOCKET.core_cpus(moved.cpus.first())  # a whole core
    assert moved.cpus.isdisjoint(cpus("0,8"))
    assert len(moved.cpus) == moved.request == 2
    assert moved.cpus <= NODE0  # the replacement stays on its NUMA node
    assert plan.placement is not None
    assert (plan.placement.cpus, plan.placement.mems) == (cpus("0"), cpus("0"))

    move = next(u for u in plan.updates if u.container_id == "db")
    assert move.kind is Kind.INTEGER
    assert (move.previous_cpus, move.cpus) == (cpus("0,8"), moved.cpus)
    assert move.subject == "ns/db/main"
    assert "ns/pin/main" in move.reason
    assert "ns/db/main" in plan.reason

    pool_update = next(u for u in plan.updates if u.container_id == "web")
    assert pool_update.previous_cpus == ALL - cpus("0,8")
    assert pool_update.cpus == ALL - cpus("0") - moved.cpus
    assert violations(DUAL_SOCKET, engine.ledger, engine.settings) == []


def test_moves_come_before_the_shared_pool_updates() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    admit_shared(engine, "web")
    admit_integer(engine, "db", 2)
    kinds = [u.kind for u in plan_pin(engine, "pin", "0").updates]
    assert kinds == [Kind.INTEGER, Kind.SHARED]


def test_replacement_is_on_the_moved_containers_numa_node() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    admit_integer(engine, "a", 8)  # fills node 0
    admit_integer(engine, "b", 2)  # 4,12 on node 1
    assert engine.ledger.entries["b"].cpus == cpus("4,12")
    engine.commit(plan_pin(engine, "pin", "4"))
    moved = engine.ledger.entries["b"].cpus
    assert moved <= NODE1
    assert moved == DUAL_SOCKET.core_cpus(moved.first())


def test_container_whose_node_is_full_moves_whole_rather_than_spanning_two_nodes() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    admit_integer(engine, "db", 2)       # 0,8
    admit_integer(engine, "filler", 6)   # the rest of node 0
    assert engine.ledger.exclusive == NODE0
    engine.commit(plan_pin(engine, "pin", "0"))
    db = engine.ledger.entries["db"].cpus
    assert db <= NODE1
    assert db == DUAL_SOCKET.core_cpus(db.first())


def test_top_up_is_kept_when_a_fresh_set_would_be_no_better() -> None:
    """On a machine without SMT every set is "whole cores": then moving fewer CPUs wins."""
    topology = NO_SMT
    engine = CpusetEngine(topology)
    admit_integer(engine, "db", 2)
    before = engine.ledger.entries["db"].cpus
    engine.commit(plan_pin(engine, "pin", str(before.first())))
    after = engine.ledger.entries["db"].cpus
    assert before.last() in after
    assert len(after) == 2


def test_fully_displaced_container_gets_a_whole_core_on_its_node() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    admit_integer(engine, "db", 2)  # 0,8
    engine.commit(plan_pin(engine, "pin", "0,8"))
    db = engine.ledger.entries["db"].cpus
    assert db.isdisjoint(cpus("0,8"))
    assert db <= NODE0
    assert db == DUAL_SOCKET.core_cpus(db.first())


def test_several_conflicting_containers_all_move_to_disjoint_cpus() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    admit_integer(engine, "a", 2)  # 0,8
    admit_integer(engine, "b", 2)  # 1,9
    admit_integer(engine, "c", 2)  # 2,10: not in conflict
    before_c = owned(engine, "c")
    plan = plan_pin(engine, "pin", "0-1")
    engine.commit(plan)
    a, b = engine.ledger.entries["a"].cpus, engine.ledger.entries["b"].cpus
    assert {u.container_id for u in plan.updates} == {"a", "b"}
    # a takes node 0's last whole core; b stays on its NUMA node (requirement 3.5, "NUMA
    # consistency") on the two threads the pin left, rather than moving to node 1.
    assert a == cpus("3,11")
    assert b == cpus("8-9")
    assert (a | b) <= NODE0
    assert a.isdisjoint(b)
    assert (a | b).isdisjoint(cpus("0-1"))
    assert owned(engine, "c") == before_c
    assert violations(DUAL_SOCKET, engine.ledger, engine.settings) == []


def test_pin_overlapping_other_pins_and_an_integer_container_moves_only_the_integer() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    engine.commit(plan_pin(engine, "first", "0-1"))
    admit_integer(engine, "db", 2)
    db_before = engine.ledger.entries["db"].cpus
    pins = f"1,{db_before.first()}"
    plan = plan_pin(engine, "second", pins)
    engine.commit(plan)
    assert [u.container_id for u in plan.updates] == ["db"]
    assert engine.ledger.annot_refs[1] == 2
    assert engine.ledger.entries["db"].cpus.isdisjoint(cpus(pins))


def test_no_room_to_move_raises_naming_the_conflicting_container_and_changes_nothing() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    admit_integer(engine, "small", 2)
    admit_integer(engine, "rest", 14)
    before = engine.ledger
    with pytest.raises(InsufficientCpusForReassignmentError) as caught:
        plan_pin(engine, "pin", "0")
    err = caught.value
    assert err.conflicting == ("ns/small/main",)
    assert (err.needed, err.free) == (1, 0)
    assert "ns/pin/main" in str(err)
    assert "ns/small/main" in str(err)
    assert engine.ledger is before
    assert engine.ledger.entries["small"].cpus == cpus("0,8")


def test_no_room_for_every_conflicting_container_names_them_all() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    admit_integer(engine, "a", 2)    # 0,8
    admit_integer(engine, "b", 2)    # 1,9
    admit_integer(engine, "c", 11)   # leaves one CPU free
    with pytest.raises(InsufficientCpusForReassignmentError) as caught:
        plan_pin(engine, "pin", "0-1")
    assert caught.value.conflicting == ("ns/a/main", "ns/b/main")
    assert (caught.value.needed, caught.value.free) == (2, 1)


def test_move_that_would_take_the_last_shared_cpu_is_refused() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    admit_shared(engine, "web")
    admit_integer(engine, "db", 2)
    admit_integer(engine, "big", 13)
    assert len(engine.shared_pool()) == 1
    before = engine.ledger
    with pytest.raises(SharedPoolExhaustedError, match="ns/pin/main"):
        plan_pin(engine, "pin", "0")
    assert engine.ledger is before


def test_replacement_never_lands_on_system_reserved_cpus() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(system_reserved=cpus("1-3,9-11")))
    admit_integer(engine, "db", 2)  # 0,8: node 0's only non-reserved core
    engine.commit(plan_pin(engine, "pin", "0"))
    db = engine.ledger.entries["db"].cpus
    assert db.isdisjoint(cpus("1-3,9-11"))
    assert db.isdisjoint(cpus("0"))
