"""Synchronize of a busy machine after a restart: everyone placed consistently and
deterministically, problems named, later creates and releases keep the invariants.

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import (
    InsufficientCpusError,
    InvalidAnnotationError,
    SharedPoolExhaustedError,
)
from cpuset_core.invariants import violations
from cpuset_core.model import ContainerFacts, Kind, Placement, PodFacts
from tests.builders.facts import container, pod, subject
from tests.unit.core.engine_steps import (
    KEY,
    annotated_ctr,
    integer_ctr,
    release,
    sync,
    updates_by_id,
)
from tests.unit.core.topologies import DUAL_SOCKET, OFFLINE_ISO, cpus

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
