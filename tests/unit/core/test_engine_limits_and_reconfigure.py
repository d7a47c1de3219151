"""The minimum shared pool (admissions refused below it, synchronize reports it) and live
reconfiguration of the engine's settings.

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import PinNotAllowedError, SharedPoolBelowMinimumError
from cpuset_core.settings import Settings
from tests.builders.facts import container, pod
from tests.unit.core.engine_steps import KEY, _integer, annotated_ctr
from tests.unit.core.topologies import DUAL_SOCKET, cpus

# -- minimum shared pool ---------------------------------------------------------------------


def test_an_admission_that_would_shrink_the_pool_below_the_minimum_is_refused() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=12))
    _integer(engine, "db", 4)  # pool 16 -> 12: allowed
    ledger = engine.ledger
    p = pod("more")
    with pytest.raises(SharedPoolBelowMinimumError, match="below the configured minimum of 12"):
        engine.plan_create(p, container("more", p, cpu_limit=2))
    io = pod("io", annotations={KEY: "15"})
    with pytest.raises(SharedPoolBelowMinimumError, match="min_shared_pool"):
        engine.plan_create(io, container("io", io))
    assert engine.ledger is ledger


def test_the_minimum_allows_a_change_that_keeps_the_pool_and_every_release() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=12))
    a = pod("a", annotations={KEY: "15"})
    engine.commit(engine.plan_create(a, container("a", a)))   # pool 16 -> 15
    _integer(engine, "db", 3)                                   # pool 15 -> 12
    b = pod("b", annotations={KEY: "15"})
    engine.commit(engine.plan_create(b, container("b", b)))   # shares CPU 15: pool stays 12
    assert len(engine.shared_pool()) == 12
    engine.commit(engine.plan_release("db"))
    assert len(engine.shared_pool()) == 15


def test_synchronize_reports_a_pool_below_the_minimum() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=14))
    db = pod("db")
    plan = engine.plan_synchronize([db], [container("db", db, cpu_limit=4, cpus_now="0-1,8-9")])
    assert any(p.reason == "shared-pool-below-minimum" and "minimum of 14" in str(p)
               for p in plan.problems)
    empty = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=20)).plan_synchronize([], [])
    assert empty.problems == ()  # nothing reserved: a configuration matter, not a problem


def test_a_negative_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="min_shared_pool must be >= 0"):
        Settings(min_shared_pool=-1)


# -- reconfigure -------------------------------------------------------------------------------


def test_reconfigure_applies_live_settings_to_later_decisions_only() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    first = annotated_ctr(engine, "first", "0")
    engine.reconfigure(Settings(pin_namespaces=("weka",), min_shared_pool=2))
    assert engine.settings.pin_namespaces == ("weka",)
    assert engine.placement(first.container_id or "") is not None
    p = pod("second", annotations={KEY: "1"})
    with pytest.raises(PinNotAllowedError):
        engine.plan_create(p, container("second", p))


@pytest.mark.parametrize(("change", "named"), [
    (Settings(system_reserved=cpus("0")), "system_reserved"),
    (Settings(strict_reservation=True), "strict_reservation"),
    (Settings(exclusive_on_isolated=True), "exclusive_on_isolated"),
    (Settings(pin_annotation="example.com/pin", system_reserved=cpus("1")),
     "pin_annotation, system_reserved"),
])
def test_reconfigure_refuses_settings_that_need_a_restart(change: Settings, named: str) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    before = engine.settings
    with pytest.raises(ValueError, match=f"^{named} cannot change while running"):
        engine.reconfigure(change)
    assert engine.settings is before
