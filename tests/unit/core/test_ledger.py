"""The reservation ledger: refcounts, ownership, replacement, one-pass builds, immutability."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import reduce

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import Kind, Placement
from tests.unit.core.topologies import cpus


def annotated(cid: str, pins: str, mems: str | None = "0") -> Entry:
    return Entry(container_id=cid, subject=f"ns/{cid}/main", sandbox_id=f"sb-{cid}",
                 kind=Kind.ANNOTATED, cpus=cpus(pins), mems=None if mems is None else cpus(mems))


def integer(cid: str, owned: str) -> Entry:
    return Entry(container_id=cid, subject=f"ns/{cid}/main", sandbox_id=f"sb-{cid}",
                 kind=Kind.INTEGER, cpus=cpus(owned), request=len(cpus(owned)))


def shared(cid: str) -> Entry:
    return Entry(container_id=cid, subject=f"ns/{cid}/main", sandbox_id=f"sb-{cid}",
                 kind=Kind.SHARED)


def build(entries: Sequence[Entry]) -> Ledger:
    return reduce(Ledger.with_entry, entries, Ledger())


def test_empty_ledger_holds_nothing() -> None:
    ledger = Ledger()
    assert len(ledger) == 0
    assert (ledger.pinned, ledger.exclusive, ledger.reserved) == (EMPTY, EMPTY, EMPTY)
    assert ledger.shared_count == 0
    assert ledger.shared_ids() == ()
    assert "x" not in ledger
    assert ledger.get("x") is None


# -- each kind ---------------------------------------------------------------------------------


def test_annotated_entry_refcounts_its_pins() -> None:
    ledger = Ledger().with_entry(annotated("a", "0-2"))
    assert dict(ledger.annot_refs) == {0: 1, 1: 1, 2: 1}
    assert ledger.pinned == cpus("0-2")
    assert ledger.exclusive == EMPTY
    assert ledger.reserved == cpus("0-2")
    assert dict(ledger.int_owner) == {}
    assert ledger.shared_count == 0


def test_integer_entry_owns_its_cpus() -> None:
    ledger = Ledger().with_entry(integer("i", "4,12"))
    assert dict(ledger.int_owner) == {4: "i", 12: "i"}
    assert ledger.exclusive == cpus("4,12")
    assert ledger.pinned == EMPTY
    assert ledger.reserved == cpus("4,12")
    assert dict(ledger.annot_refs) == {}


def test_shared_entry_counts_without_reserving_cpus() -> None:
    ledger = Ledger().with_entry(shared("s"))
    assert ledger.shared_count == 1
    assert ledger.shared_ids() == ("s",)
    assert ledger.reserved == EMPTY
    assert "s" in ledger
    assert len(ledger) == 1


@pytest.mark.parametrize("entry", [annotated("x", "1-3"), integer("x", "1-3"), shared("x")],
                         ids=["annotated", "integer", "shared"])
def test_without_undoes_with_entry_for_every_kind(entry: Entry) -> None:
    base = Ledger().with_entry(annotated("keep", "8")).with_entry(integer("own", "9"))
    assert base.with_entry(entry).without("x") == base


def test_without_an_unknown_id_returns_the_same_snapshot() -> None:
    ledger = Ledger().with_entry(integer("i", "0"))
    assert ledger.without("nope") is ledger


# -- refcounts with overlapping pins ------------------------------------------------------------


def test_overlapping_pins_are_counted_per_container() -> None:
    ledger = build([annotated("a", "0-3"), annotated("b", "2-5")])
    assert dict(ledger.annot_refs) == {0: 1, 1: 1, 2: 2, 3: 2, 4: 1, 5: 1}
    assert ledger.pinned == cpus("0-5")


@pytest.mark.parametrize(("first", "left_refs", "left_pinned"), [
    ("a", {2: 1, 3: 1, 4: 1, 5: 1}, "2-5"),
    ("b", {0: 1, 1: 1, 2: 1, 3: 1}, "0-3"),
])
def test_removing_overlapping_pins_in_either_order_keeps_exact_counts(
        first: str, left_refs: dict[int, int], left_pinned: str) -> None:
    ledger = build([annotated("a", "0-3"), annotated("b", "2-5")])
    after_one = ledger.without(first)
    assert dict(after_one.annot_refs) == left_refs
    assert after_one.pinned == cpus(left_pinned)
    second = "b" if first == "a" else "a"
    after_both = after_one.without(second)
    assert dict(after_both.annot_refs) == {}
    assert after_both.pinned == EMPTY
    assert after_both == Ledger()


def test_three_containers_on_the_same_cpu_release_it_only_with_the_last() -> None:
    ledger = build([annotated("a", "7"), annotated("b", "7"), annotated("c", "7")])
    assert ledger.annot_refs[7] == 3
    ledger = ledger.without("b")
    assert (ledger.annot_refs[7], ledger.pinned) == (2, cpus("7"))
    ledger = ledger.without("a")
    assert (ledger.annot_refs[7], ledger.pinned) == (1, cpus("7"))
    assert ledger.without("c").pinned == EMPTY


# -- mixed contents ----------------------------------------------------------------------------


def test_reserved_is_pinned_union_exclusive() -> None:
    ledger = build([annotated("a", "0-1"), integer("i", "4-5"), shared("s")])
    assert ledger.pinned == cpus("0-1")
    assert ledger.exclusive == cpus("4-5")
    assert ledger.reserved == cpus("0-1,4-5")
    assert dict(ledger.int_owner) == {4: "i", 5: "i"}


def test_int_owner_names_each_cpus_owner() -> None:
    ledger = build([integer("x", "0,8"), integer("y", "1-2")])
    assert dict(ledger.int_owner) == {0: "x", 8: "x", 1: "y", 2: "y"}


def test_shared_ids_follow_admission_order() -> None:
    """Admission order, not id order (the brief asked for sorted ids; the ledger now keeps the
    order shared containers were admitted in, which is just as deterministic)."""
    ledger = build([shared("c"), integer("i", "0"), shared("a"), annotated("p", "1"),
                    shared("b")])
    assert ledger.shared_ids() == ("c", "a", "b")
    assert ledger.shared_count == 3
    assert ledger.with_entry(shared("aa")).shared_ids() == ("c", "a", "b", "aa")
    assert ledger.without("a").shared_ids() == ("c", "b")
    assert ledger.with_entry(shared("c")).shared_ids() == ("a", "b", "c")
    assert ledger.with_entry(integer("a", "5")).shared_ids() == ("c", "b")


def test_of_kind_yields_entries_in_container_id_order() -> None:
    ledger = build([integer("z", "0"), integer("m", "1"), shared("a"), integer("b", "2")])
    assert [e.container_id for e in ledger.of_kind(Kind.INTEGER)] == ["b", "m", "z"]
    assert [e.container_id for e in ledger.of_kind(Kind.SHARED)] == ["a"]
    assert list(ledger.of_kind(Kind.ANNOTATED)) == []


# -- replacing an entry ------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new"), [
    (annotated("x", "0-1"), annotated("x", "2-3")),
    (integer("x", "0-1"), integer("x", "2-3")),
    (integer("x", "0-1"), integer("x", "0-1")),
    (integer("x", "0-1"), integer("x", "1-2")),
    (annotated("x", "0-1"), integer("x", "0-1")),
    (integer("x", "0-1"), annotated("x", "0-1")),
    (integer("x", "0-1"), shared("x")),
    (shared("x"), annotated("x", "5")),
    (shared("x"), shared("x")),
], ids=lambda e: f"{e.kind.value}:{e.cpus}")
def test_replacing_an_entry_with_the_same_id_equals_adding_only_the_new_one(
        old: Entry, new: Entry) -> None:
    base = build([annotated("other", "6"), integer("own", "7"), shared("s")])
    replaced = base.with_entry(old).with_entry(new)
    assert replaced == base.with_entry(new)
    assert replaced.get("x") is new
    assert len(replaced) == len(base) + 1


@pytest.mark.parametrize("taken_by", [integer("owner", "2-3"), annotated("pin", "3")],
                         ids=["exclusive", "pinned"])
def test_with_entry_refuses_an_integer_entry_on_a_reserved_cpu(taken_by: Entry) -> None:
    ledger = Ledger().with_entry(taken_by)
    with pytest.raises(ValueError, match=r"ns/new/main"):
        ledger.with_entry(integer("new", "3-4"))


def test_with_entry_refuses_an_annotated_entry_on_an_exclusive_cpu() -> None:
    """Regression: this used to be accepted (a CPU both pinned and exclusive) while
    from_entries refused the same entries."""
    ledger = Ledger().with_entry(integer("owner", "2-3"))
    with pytest.raises(ValueError, match=r"ns/pin/main"):
        ledger.with_entry(annotated("pin", "3"))


# -- from_entries ------------------------------------------------------------------------------


@pytest.mark.parametrize("entries", [
    [],
    [shared("s")],
    [annotated("a", "0-3"), annotated("b", "2-5"), integer("i", "6-7"), shared("s"),
     shared("t")],
    [integer("i", "0"), integer("j", "1"), integer("k", "2-9")],
    [annotated("a", "0", mems=None), annotated("b", "0", mems="1"), annotated("c", "0-1")],
], ids=["empty", "one-shared", "mixed", "integers", "same-pin"])
def test_from_entries_equals_successive_with_entry(entries: list[Entry]) -> None:
    built = Ledger.from_entries(entries)
    assert built == build(entries)
    assert built.shared_ids() == build(entries).shared_ids()
    backwards = Ledger.from_entries(reversed(entries))
    assert dict(backwards.entries) == dict(built.entries)
    assert dict(backwards.annot_refs) == dict(built.annot_refs)
    assert dict(backwards.int_owner) == dict(built.int_owner)
    assert (backwards.pinned, backwards.exclusive) == (built.pinned, built.exclusive)
    assert sorted(backwards.shared_ids()) == sorted(built.shared_ids())


@pytest.mark.parametrize(("entries", "message"), [
    ([shared("x"), integer("x", "1")], "appears twice"),
    ([integer("i", "0-1"), integer("j", "1-2")], "already exclusive"),
    ([annotated("a", "1"), integer("i", "1-2")], "both pinned and exclusive"),
    ([integer("i", "1-2"), annotated("a", "2")], "both pinned and exclusive"),
], ids=["duplicate-id", "double-exclusive", "pinned-then-exclusive", "exclusive-then-pinned"])
def test_from_entries_rejects_inconsistent_entries(entries: list[Entry], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Ledger.from_entries(entries)


# -- immutability ------------------------------------------------------------------------------


def test_a_change_leaves_the_old_snapshot_untouched() -> None:
    old = build([annotated("a", "0-1"), integer("i", "4-5"), shared("s")])
    entries, refs, owners = dict(old.entries), dict(old.annot_refs), dict(old.int_owner)
    state = (old.pinned, old.exclusive, old.shared_count, old.shared_ids())

    changed = (old.with_entry(annotated("b", "1-2")).with_entry(integer("j", "6"))
               .with_entry(shared("t")).without("a").without("i").without("s"))

    assert changed != old
    assert dict(old.entries) == entries
    assert dict(old.annot_refs) == refs
    assert dict(old.int_owner) == owners
    assert (old.pinned, old.exclusive, old.shared_count, old.shared_ids()) == state


def test_snapshot_mappings_and_fields_are_read_only() -> None:
    ledger = build([annotated("a", "0"), integer("i", "1")])
    with pytest.raises(TypeError):
        ledger.entries["x"] = shared("x")  # type: ignore[index]
    with pytest.raises(TypeError):
        ledger.annot_refs[0] = 5  # type: ignore[index]
    with pytest.raises(TypeError):
        ledger.int_owner[1] = "other"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ledger.pinned = EMPTY  # type: ignore[misc]


# -- placement ---------------------------------------------------------------------------------


POOL = cpus("8-15")


@pytest.mark.parametrize(("cid", "expected"), [
    ("a", Placement(kind=Kind.ANNOTATED, cpus=cpus("0-1"), mems=cpus("0"))),
    ("i", Placement(kind=Kind.INTEGER, cpus=cpus("4-5"))),
    ("s", Placement(kind=Kind.SHARED, cpus=POOL)),
    ("unknown", None),
])
def test_placement_of_each_kind(cid: str, expected: Placement | None) -> None:
    ledger = build([annotated("a", "0-1"), integer("i", "4-5"), shared("s")])
    assert ledger.placement(cid, POOL) == expected


def test_integer_placement_leaves_mems_alone() -> None:
    placement = Ledger().with_entry(integer("i", "3")).placement("i", POOL)
    assert placement is not None
    assert placement.mems is None
