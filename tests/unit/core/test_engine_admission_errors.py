"""The engine refusing a container: each admission error names the container, carries its
details and leaves the ledger unchanged; when emptying the shared pool is allowed.

Most tests run on DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8
are siblings.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import (
    AdmissionError,
    CpuUnavailableError,
    InsufficientCpusError,
    InsufficientCpusForReassignmentError,
    InvalidAnnotationError,
    NumaResolutionError,
    PinNotAllowedError,
    SharedPoolExhaustedError,
)
from cpuset_core.model import ContainerFacts, PodFacts
from cpuset_core.settings import Settings
from tests.builders.facts import container, pod, subject
from tests.unit.core.engine_steps import ALL, KEY, annotated_ctr, integer_ctr, placed, shared_ctr
from tests.unit.core.topologies import DUAL_SOCKET, OFFLINE_ISO, cpus, one_cpu_per_node

# -- admission errors --------------------------------------------------------------------------

Scenario = Callable[[], tuple[CpusetEngine, PodFacts, ContainerFacts]]


def offline_pin() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    p = pod("pinned", annotations={KEY: "6-7"})
    return CpusetEngine(OFFLINE_ISO), p, container("c", p)


def unknown_pin() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    p = pod("pinned", annotations={KEY: "0,99"})
    return CpusetEngine(DUAL_SOCKET), p, container("c", p)


def invalid_annotation() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    p = pod("pinned", annotations={KEY: "0-x"})
    return CpusetEngine(DUAL_SOCKET), p, container("c", p)


def too_many_integer_cpus() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "first", 2)
    p = pod("big")
    return engine, p, container("c", p, cpu_limit=15)


def shared_with_everything_reserved() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    annotated_ctr(engine, "all", "0-15")
    p = pod("late", qos="besteffort")
    return engine, p, container("c", p)


def integer_emptying_the_pool() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    p = pod("big")
    return engine, p, container("c", p, cpu_limit=16)


def annotated_emptying_the_pool() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    shared_ctr(engine, "s")
    annotated_ctr(engine, "half", "0-7")
    p = pod("rest", annotations={KEY: "8-15"})
    return engine, p, container("c", p)


def reassignment_without_room() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "small", 2)
    integer_ctr(engine, "rest", 14)
    p = pod("pinned", annotations={KEY: "0"})
    return engine, p, container("c", p)


def pin_from_disallowed_namespace() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    engine = CpusetEngine(DUAL_SOCKET, Settings(pin_namespaces=("weka-*",)))
    p = pod("pinned", annotations={KEY: "0"})
    return engine, p, container("c", p)


def unresolvable_numa() -> tuple[CpusetEngine, PodFacts, ContainerFacts]:
    topology = one_cpu_per_node(2, memory=cpus("0"), distances={})
    p = pod("pinned", annotations={KEY: "1"})
    return CpusetEngine(topology), p, container("c", p)


@pytest.mark.parametrize(("scenario", "error", "mentions"), [
    (offline_pin, CpuUnavailableError, "CPU(s) 7 that are not online (online: 0-6)"),
    (unknown_pin, CpuUnavailableError, "CPU(s) 99"),
    (invalid_annotation, InvalidAnnotationError, "'0-x'"),
    (too_many_integer_cpus, InsufficientCpusError, "needs 15 exclusive CPU(s) but only 14"),
    (shared_with_everything_reserved, SharedPoolExhaustedError, "shared CPU pool would be empty"),
    (integer_emptying_the_pool, SharedPoolExhaustedError, "1 shared container(s)"),
    (annotated_emptying_the_pool, SharedPoolExhaustedError, "1 shared container(s)"),
    (reassignment_without_room, InsufficientCpusForReassignmentError, "ns/small/main"),
    (unresolvable_numa, NumaResolutionError, "NUMA node 1 has no memory"),
    (pin_from_disallowed_namespace, PinNotAllowedError,
     "namespace 'ns' may not use the annotation weka.io/cores-ids (pin_namespaces allows: "
     "weka-*)"),
], ids=lambda v: getattr(v, "__name__", None))
def test_admission_error_names_the_container_and_changes_nothing(
        scenario: Scenario, error: type[AdmissionError], mentions: str) -> None:
    engine, p, c = scenario()
    before = engine.ledger
    with pytest.raises(error) as caught:
        engine.plan_create(p, c)
    message = str(caught.value)
    assert f"ns/{p.name}/main" in message
    assert caught.value.subject == subject(p)
    assert mentions in message
    assert engine.ledger is before


def test_offline_pin_error_carries_the_unavailable_cpus() -> None:
    engine, p, c = offline_pin()
    with pytest.raises(CpuUnavailableError) as caught:
        engine.plan_create(p, c)
    assert (caught.value.key, caught.value.cpus, caught.value.unavailable) == (KEY, "6-7", "7")


@pytest.mark.parametrize(("held", "request_", "free"), [(0, 17, 16), (2, 15, 14), (10, 7, 6)])
def test_too_many_integer_cpus_reports_requested_and_free(held: int, request_: int,
                                                          free: int) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    if held:
        integer_ctr(engine, "held", held)
    p = pod("big")
    with pytest.raises(InsufficientCpusError) as caught:
        engine.plan_create(p, container("c", p, cpu_limit=request_))
    assert (caught.value.requested, caught.value.free) == (request_, free)


def test_shared_pool_may_be_emptied_by_integer_containers_when_no_shared_container_exists() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    plan = integer_ctr(engine, "all", 16)
    assert placed(plan).cpus == ALL
    assert plan.shared_pool == EMPTY


def test_shared_pool_may_be_emptied_by_pins_when_no_shared_container_exists() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    annotated_ctr(engine, "half", "0-7")
    assert annotated_ctr(engine, "rest", "8-15").shared_pool == EMPTY


def test_shared_container_on_a_machine_whose_only_shared_cpus_are_pinned_is_refused() -> None:
    engine = CpusetEngine(OFFLINE_ISO)  # isolated 2-3 never join the pool
    annotated_ctr(engine, "pin", "0-1,4-6")
    p = pod("late", qos="burstable")
    with pytest.raises(SharedPoolExhaustedError, match="ns/late/main"):
        engine.plan_create(p, container("c", p))
