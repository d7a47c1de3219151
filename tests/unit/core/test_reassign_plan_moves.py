"""Live reassignment's ``plan_moves`` directly: which containers move, in what order, where
their replacements come from, and the room check.

DUAL_SOCKET: node 0 = 0-3,8-11, node 1 = 4-7,12-15; CPU n and n+8 are siblings.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import Kind
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.policy.reassign import NoRoomToMoveError, plan_moves
from tests.unit.core.reassign_steps import ALL
from tests.unit.core.topologies import DUAL_SOCKET, cpus

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
