"""The ledger's numbered invariants: silent on valid ledgers, precise on hand-broken ones.

Broken ledgers are built with the dataclass constructor (through ``dataclasses.replace`` on a
valid snapshot, so each case changes exactly the fields it means to break).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import MappingProxyType

import pytest

from cpuset_core import invariants
from cpuset_core.cpuset import CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.invariants import violations
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import Kind
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, Settings
from cpuset_core.topology import Topology
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET, OFFLINE_ISO, cpus

DEFAULTS = Settings()


def annotated(cid: str, pins: str) -> Entry:
    return Entry(container_id=cid, subject=f"ns/{cid}/main", sandbox_id=f"sb-{cid}",
                 kind=Kind.ANNOTATED, cpus=cpus(pins), mems=cpus("0"))


def integer(cid: str, owned: str, request: int | None = None) -> Entry:
    held = cpus(owned)
    return Entry(container_id=cid, subject=f"ns/{cid}/main", sandbox_id=f"sb-{cid}",
                 kind=Kind.INTEGER, cpus=held, request=len(held) if request is None else request)


def shared(cid: str) -> Entry:
    return Entry(container_id=cid, subject=f"ns/{cid}/main", sandbox_id=f"sb-{cid}",
                 kind=Kind.SHARED)


def numbers(found: list[str]) -> set[str]:
    """The invariant numbers a list of violations names ("1: ..." -> "1")."""
    return {v.split(":", 1)[0] for v in found}


def busy_engine_ledger() -> Ledger:
    engine = CpusetEngine(DUAL_SOCKET)
    web, db, pin, pin2 = (pod("web", qos="burstable"), pod("db"),
                          pod("pin", annotations={DEFAULT_PIN_ANNOTATION: "0-2"}),
                          pod("pin2", annotations={DEFAULT_PIN_ANNOTATION: "2-3"}))
    for p, c in ((web, container("web", web)), (db, container("db", db, cpu_limit=3)),
                 (pin, container("pin", pin)), (pin2, container("pin2", pin2))):
        engine.commit(engine.plan_create(p, c))
    engine.commit(engine.plan_release("pin"))
    return engine.ledger


# -- valid ledgers -----------------------------------------------------------------------------


@pytest.mark.parametrize(("topology", "config", "ledger"), [
    (DUAL_SOCKET, DEFAULTS, Ledger()),
    (DUAL_SOCKET, DEFAULTS, Ledger.from_entries([annotated("a", "0-3"), annotated("b", "2-5"),
                                                integer("i", "6-7"), shared("s")])),
    (DUAL_SOCKET, DEFAULTS, busy_engine_ledger()),
    (DUAL_SOCKET, DEFAULTS, Ledger.from_entries([annotated("all", "0-15")])),
    (OFFLINE_ISO, Settings(exclusive_on_isolated=True),
     Ledger.from_entries([integer("i", "2-3"), shared("s")])),
    (OFFLINE_ISO, Settings(system_reserved=cpus("0")),
     Ledger.from_entries([annotated("a", "0,2"), shared("s")])),
], ids=["empty", "mixed", "engine-built", "all-pinned-no-shared", "exclusive-on-isolated",
        "pins-on-reserved-and-isolated"])
def test_valid_ledgers_have_no_violations(topology: Topology, config: Settings,
                                          ledger: Ledger) -> None:
    assert violations(topology, ledger, config) == []


# -- each invariant, broken by hand ------------------------------------------------------------


def two_owners_of_one_cpu() -> Ledger:
    base = Ledger.from_entries([integer("a", "0-1")])
    return dataclasses.replace(
        base, entries=MappingProxyType({"a": integer("a", "0-1"), "b": integer("b", "1-2")}),
        int_owner=MappingProxyType({0: "a", 1: "b", 2: "b"}), exclusive=cpus("0-2"))


def owner_index_disagrees() -> Ledger:
    base = Ledger.from_entries([integer("a", "0-1")])
    return dataclasses.replace(base, int_owner=MappingProxyType({0: "a"}))


def exclusive_mask_disagrees() -> Ledger:
    return dataclasses.replace(Ledger.from_entries([integer("a", "0-1")]), exclusive=cpus("0-2"))


def refcount_too_low() -> Ledger:
    base = Ledger.from_entries([annotated("a", "0"), annotated("b", "0")])
    return dataclasses.replace(base, annot_refs=MappingProxyType({0: 1}))


def pinned_mask_disagrees() -> Ledger:
    return dataclasses.replace(Ledger.from_entries([annotated("a", "0")]), pinned=cpus("0-1"))


def pinned_and_exclusive() -> Ledger:
    base = Ledger.from_entries([annotated("a", "0")])
    return dataclasses.replace(
        base, entries=MappingProxyType({"a": annotated("a", "0"), "b": integer("b", "0")}),
        int_owner=MappingProxyType({0: "b"}), exclusive=cpus("0"))


def short_of_its_request() -> Ledger:
    return Ledger.from_entries([integer("a", "0-1", request=3)])


def shared_without_a_pool() -> Ledger:
    return Ledger.from_entries([annotated("all", "0-15"), shared("s")])


@pytest.mark.parametrize(("broken", "expected", "mentions"), [
    (two_owners_of_one_cpu, {"1"}, "1: CPU 1 owned by a and b"),
    (owner_index_disagrees, {"1"}, "int_owner or the exclusive mask"),
    (exclusive_mask_disagrees, {"1"}, "int_owner or the exclusive mask"),
    (refcount_too_low, {"2"}, "2: annot_refs {0: 1} != counted {0: 2}"),
    (pinned_mask_disagrees, {"2"}, "2: annot_refs"),
    (pinned_and_exclusive, {"3"}, "3: CPU(s) 0 are pinned and exclusive"),
    (short_of_its_request, {"5"}, "5: ns/a/main holds 2 CPU(s), asked for 3"),
    (shared_without_a_pool, {"7"}, "7: shared pool is empty with 1 container(s) on it"),
], ids=lambda v: getattr(v, "__name__", None))
def test_each_broken_invariant_is_reported_by_number(broken: Callable[[], Ledger],
                                                     expected: set[str], mentions: str) -> None:
    found = violations(DUAL_SOCKET, broken(), DEFAULTS)
    assert numbers(found) == expected
    assert any(mentions in v for v in found), found


def test_shared_index_that_disagrees_with_the_entries_is_reported() -> None:
    base = Ledger.from_entries([shared("s"), shared("t")])
    broken = dataclasses.replace(base, shared=("s",))
    found = violations(DUAL_SOCKET, broken, DEFAULTS)
    assert numbers(found) == {"1"}
    assert any("shared index" in v for v in found)


@pytest.mark.parametrize(("entry", "mentions"), [
    (annotated("a", "7"), "4: reserved CPU(s) 7 are not online"),
    (integer("i", "7"), "4: reserved CPU(s) 7 are not online"),
    (integer("i", "2-3"), "4: exclusive CPU(s) 2-3 of ns/i/main are isolated"),
    (dataclasses.replace(integer("i", "1-2"), isolated=True),
     "4: exclusive CPU(s) 1 of ns/i/main are not isolated"),
    (dataclasses.replace(integer("i", "2-3"), isolated=False),
     "4: exclusive CPU(s) 2-3 of ns/i/main are isolated"),
])
def test_reservations_off_the_usable_machine_break_invariant_4(entry: Entry,
                                                               mentions: str) -> None:
    found = violations(OFFLINE_ISO, Ledger.from_entries([entry]), DEFAULTS)
    assert numbers(found) == {"4"}
    assert mentions in found


def test_exclusive_cpu_on_system_reserved_breaks_invariant_4() -> None:
    found = violations(DUAL_SOCKET, Ledger.from_entries([integer("i", "0,8")]),
                       Settings(system_reserved=cpus("8")))
    assert found == ["4: exclusive CPU(s) 8 are reserved"]


def test_isolated_cpus_of_a_container_that_asked_for_them_keep_invariant_4() -> None:
    entry = dataclasses.replace(integer("i", "2-3"), isolated=True)
    assert violations(OFFLINE_ISO, Ledger.from_entries([entry]), DEFAULTS) == []


def test_shared_containers_with_only_isolated_cpus_left_break_invariant_7() -> None:
    ledger = Ledger.from_entries([annotated("a", "0-1,4-6"), shared("s")])
    assert numbers(violations(OFFLINE_ISO, ledger, DEFAULTS)) == {"7"}


def test_pool_overlapping_reserved_cpus_is_reported_as_invariant_6(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No ledger can break invariant 6 on its own: the pool is derived as online − reserved, so
    this check only fires if ``shared_pool`` itself is wrong; a broken one is injected here."""
    ledger = Ledger.from_entries([integer("i", "0-1"), shared("s")])
    assert violations(DUAL_SOCKET, ledger, DEFAULTS) == []
    def broken_pool(topology: Topology, *_: object) -> CPUSet:
        return topology.online

    monkeypatch.setattr(invariants, "shared_pool", broken_pool)
    found = violations(DUAL_SOCKET, ledger, DEFAULTS)
    assert numbers(found) == {"6"}
    assert "6: shared pool 0-15 overlaps reserved 0-1" in found


def test_several_broken_invariants_are_all_reported() -> None:
    base = Ledger.from_entries([annotated("a", "0"), shared("s")])
    broken = dataclasses.replace(
        base,
        entries=MappingProxyType({"a": annotated("a", "0"), "b": integer("b", "0,16", 3),
                                  "s": shared("s")}),
        int_owner=MappingProxyType({0: "b"}),  # 16 is missing
        exclusive=cpus("0,16"))  # 16 is not on the machine; 0 is also pinned
    assert numbers(violations(DUAL_SOCKET, broken, DEFAULTS)) == {"1", "3", "4", "5"}
