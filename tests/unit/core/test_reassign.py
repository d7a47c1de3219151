"""Live reassignment: an annotated pin on CPUs an integer container owns moves that container.

DUAL_SOCKET: node 0 = 0-3,8-11, node 1 = 4-7,12-15; CPU n and n+8 are siblings.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import InsufficientCpusForReassignmentError, SharedPoolExhaustedError
from cpuset_core.invariants import violations
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import Kind
from cpuset_core.plan import Plan
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.policy.reassign import NoRoomToMoveError, plan_moves
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, Settings
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET, NO_SMT, cpus

KEY = DEFAULT_PIN_ANNOTATION
ALL = DUAL_SOCKET.online
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


def owned(engine: CpusetEngine, cid: str) -> frozenset[int]:
    return frozenset(engine.ledger.entries[cid].cpus)


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


# -- plan_moves directly -----------------------------------------------------------------------

ALLOCATOR = ExclusiveAllocator(DUAL_SOCKET)


def integer(cid: str, owned_cpus: str) -> Entry:
    return Entry(container_id=cid, subject=f"ns/{cid}/main", sandbox_id=f"sb-{cid}",
                 kind=Kind.INTEGER, cpus=cpus(owned_cpus), request=len(cpus(owned_cpus)))


def test_pins_without_integer_owners_need_no_moves() -> None:
    ledger = Ledger.from_entries([integer("a", "0,8")])
    assert plan_moves(DUAL_SOCKET, ALLOCATOR, ledger, cpus("1-2"), ALL - cpus("0,8")) == ()


def test_moves_are_ordered_by_the_containers_lowest_cpu_not_their_id() -> None:
    ledger = Ledger.from_entries([integer("a", "5,13"), integer("b", "4,12")])
    moves = plan_moves(DUAL_SOCKET, ALLOCATOR, ledger, cpus("4-5"), ALL - ledger.exclusive)
    assert [m.entry.container_id for m in moves] == ["b", "a"]
    assert moves[0].cpus.isdisjoint(moves[1].cpus)
    assert all(m.cpus.isdisjoint(cpus("4-5")) for m in moves)


def test_replacements_come_from_free_minus_pins_only() -> None:
    ledger = Ledger.from_entries([integer("a", "4,12"), integer("other", "6,14")])
    free = cpus("5,13,7")
    (move,) = plan_moves(DUAL_SOCKET, ALLOCATOR, ledger, cpus("4,5"), free)
    assert move.cpus - cpus("12") <= free - cpus("5")


def test_moves_are_deterministic() -> None:
    ledger = Ledger.from_entries([integer("a", "0,8"), integer("b", "1,9"), integer("c", "4")])
    free = ALL - ledger.exclusive
    first = plan_moves(DUAL_SOCKET, ALLOCATOR, ledger, cpus("0-1,4"), free)
    again = plan_moves(DUAL_SOCKET, ExclusiveAllocator(DUAL_SOCKET), ledger, cpus("0-1,4"), free)
    assert first == again


def test_no_room_error_lists_subjects_needed_and_free() -> None:
    ledger = Ledger.from_entries([integer("a", "0,8"), integer("b", "1")])
    with pytest.raises(NoRoomToMoveError) as caught:
        plan_moves(DUAL_SOCKET, ALLOCATOR, ledger, cpus("0-1,8"), cpus("2"))
    assert caught.value.conflicting == ("ns/a/main", "ns/b/main")
    assert (caught.value.needed, caught.value.free) == (3, 1)


def test_free_cpus_that_are_pinned_do_not_count_as_room() -> None:
    ledger = Ledger.from_entries([integer("a", "0")])
    with pytest.raises(NoRoomToMoveError):
        plan_moves(DUAL_SOCKET, ALLOCATOR, ledger, cpus("0-1"), cpus("1"))
    assert plan_moves(DUAL_SOCKET, ALLOCATOR, Ledger(), cpus("0"), EMPTY) == ()


def test_cpus_a_moved_container_gives_up_are_free_for_the_next_one() -> None:
    """a takes a fresh whole core (2,10); the CPU it did not keep (8) must serve b."""
    ledger = Ledger.from_entries([integer("a", "0,8"), integer("b", "1,9")])
    moves = plan_moves(DUAL_SOCKET, ALLOCATOR, ledger, cpus("0-1"), cpus("2,8-10"))
    by_id = {m.entry.container_id: m.cpus for m in moves}
    assert by_id["a"].isdisjoint(by_id["b"])
    assert (by_id["a"] | by_id["b"]).isdisjoint(cpus("0-1"))
    assert len(by_id["a"]) == len(by_id["b"]) == 2


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_moves_never_fail_once_the_room_check_passed(data: st.DataObject) -> None:
    cores = list(DUAL_SOCKET.cores)
    owned = data.draw(st.lists(st.sampled_from(cores), min_size=1, max_size=6, unique=True))
    entries = [integer(f"c{i}", core.format()) for i, core in enumerate(owned)]
    ledger = Ledger.from_entries(entries)
    pins = CPUSet(data.draw(st.sets(st.sampled_from(sorted(ledger.exclusive)), min_size=1)))
    free = ALL - ledger.exclusive - pins
    try:
        moves = plan_moves(DUAL_SOCKET, ALLOCATOR, ledger, pins, free)
    except NoRoomToMoveError:
        return
    final = {e.container_id: e.cpus for e in entries} | {m.entry.container_id: m.cpus
                                                         for m in moves}
    union = CPUSet()
    for cid, owned_cpus in final.items():
        assert owned_cpus.isdisjoint(pins), cid
        assert owned_cpus.isdisjoint(union), cid
        assert len(owned_cpus) == ledger.entries[cid].request
        union |= owned_cpus
