"""In-place resize of integer containers: shrinking keeps whole cores, growing stays on the node.

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import PinNotAllowedError
from cpuset_core.invariants import violations
from cpuset_core.model import ContainerFacts, Kind, Placement, PodFacts
from cpuset_core.settings import Settings
from tests.builders.facts import container, pod
from tests.unit.core.engine_steps import KEY, _integer
from tests.unit.core.topologies import DUAL_SOCKET


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


def _kept_shared_pin(engine: CpusetEngine) -> tuple[PodFacts, ContainerFacts]:
    """A pin that a Synchronize ran shared: its namespace (``ns``) may not pin."""
    io = pod("io", annotations={KEY: "3"})
    app = container("io", io)
    plan = engine.plan_synchronize([io], [app])
    assert [p.reason for p in plan.problems] == ["pin-namespace-not-allowed"]
    engine.commit(plan)
    assert engine.ledger.entries["io"].kind is Kind.SHARED
    return io, app


def test_a_pin_run_shared_because_its_namespace_may_not_pin_is_resized_in_place() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(pin_namespaces=("default",)))
    io, _ = _kept_shared_pin(engine)
    ledger = engine.ledger
    plan = engine.plan_resize(io, container("io", io, cpu_limit=2))
    assert plan.result is ledger
    assert plan.placement == Placement(kind=Kind.SHARED, cpus=engine.shared_pool())
    assert "may not use the annotation" in plan.reason


def test_a_running_pin_keeps_its_pin_at_a_resize_after_its_namespace_lost_the_right() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    io = pod("io", annotations={KEY: "3"})
    engine.commit(engine.plan_create(io, container("io", io)))
    engine.reconfigure(Settings(pin_namespaces=("default",)))
    plan = engine.plan_resize(io, container("io", io, cpu_limit=2))
    assert plan.result is engine.ledger
    assert plan.placement is not None
    assert plan.placement.cpus == CPUSet.parse("3")


def test_a_pin_allowed_again_is_pinned_at_its_next_resize_and_one_never_seen_is_refused(
        ) -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(pin_namespaces=("default",)))
    io, _ = _kept_shared_pin(engine)
    stranger = pod("web", annotations={KEY: "5"})
    with pytest.raises(PinNotAllowedError):
        engine.plan_resize(stranger, container("web", stranger))
    engine.reconfigure(Settings())
    plan = engine.plan_resize(io, container("io", io))
    assert plan.placement is not None
    assert (plan.placement.kind, plan.placement.cpus) == (Kind.ANNOTATED, CPUSet.parse("3"))


def test_an_invalid_pin_annotation_on_a_running_shared_container_is_not_a_resize_refusal(
        ) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    web = pod("web", annotations={KEY: "3-"})
    app = container("web", web)
    plan = engine.plan_synchronize([web], [app])
    assert [p.reason for p in plan.problems] == ["invalid-annotation"]
    engine.commit(plan)
    resized = engine.plan_resize(web, container("web", web, cpu_limit=2))
    assert resized.result is engine.ledger
    assert "is invalid" in resized.reason
