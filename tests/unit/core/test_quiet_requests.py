"""Quiet CPUs (issue 43): the requests in this project's words and CRI-O's, who may ask, who
gets them, and which CPUs must be quiet as a function of the ledger's live containers.

DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8 are siblings.
"""

from __future__ import annotations

import pytest

from cpuset_core import AnnotationValueError, PinNotAllowedError, violations
from cpuset_core.classify import classify
from cpuset_core.cpuset import CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.model import PodFacts
from cpuset_core.quiet import quiet_state
from cpuset_core.quiet_request import CRIO_GOVERNOR, CRIO_IDLE, CRIO_IRQ, Quiet, quiet_of
from cpuset_core.settings import Settings
from cpuset_core.workload import MIXED, QUIET_IDLE, QUIET_IRQS
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET


def of(annotations: dict[str, str], name: str = "app") -> Quiet | None:
    return quiet_of(annotations, name, "ns/p/app")


# -- the vocabulary ------------------------------------------------------------------------------

@pytest.mark.parametrize(("annotations", "expected"), [
    ({CRIO_IRQ: "disable"}, Quiet(irqs=True, keys=(CRIO_IRQ,))),
    ({CRIO_IRQ: "true"}, Quiet(irqs=True, keys=(CRIO_IRQ,))),
    ({CRIO_IDLE: "disable"}, Quiet(idle_limit=0, keys=(CRIO_IDLE,))),
    ({CRIO_IDLE: "max_latency:10"}, Quiet(idle_limit=10, keys=(CRIO_IDLE,))),
    ({CRIO_GOVERNOR: "performance"}, Quiet(governor="performance", keys=(CRIO_GOVERNOR,))),
    ({QUIET_IRQS.pod_key: "true"}, Quiet(irqs=True, keys=(QUIET_IRQS.pod_key,))),
    ({QUIET_IDLE.container_prefix + "app": "true"},
     Quiet(idle_limit=0, keys=(QUIET_IDLE.container_prefix + "app",))),
])
def test_each_request_is_read_in_either_vocabulary(annotations: dict[str, str],
                                                  expected: Quiet) -> None:
    assert of(annotations) == expected


@pytest.mark.parametrize("annotations", [
    {}, {CRIO_IRQ: "enable"}, {CRIO_IDLE: "enable"}, {QUIET_IRQS.pod_key: "false"},
    {MIXED.pod_key: "true"},
])
def test_a_pod_that_asks_nothing_quiet_has_no_request(annotations: dict[str, str]) -> None:
    assert of(annotations) is None


def test_this_projects_key_wins_over_crios_and_a_containers_over_its_pods() -> None:
    annotations = {CRIO_IRQ: "disable", QUIET_IRQS.container_prefix + "app": "false",
                   CRIO_IDLE: "max_latency:50", QUIET_IDLE.pod_key: "true"}
    assert of(annotations) == Quiet(idle_limit=0, keys=(QUIET_IDLE.pod_key,))
    assert of(annotations, "sidecar") == Quiet(irqs=True, idle_limit=0,
                                               keys=(CRIO_IRQ, QUIET_IDLE.pod_key))


@pytest.mark.parametrize(("key", "value", "expected"), [
    (CRIO_IRQ, "off", "'disable' or 'true' or 'enable'"),
    (CRIO_IRQ, "false", "'disable' or 'true' or 'enable'"),
    (CRIO_IDLE, "max_latency:", "'enable' or 'disable' or 'max_latency:<µs>'"),
    (CRIO_IDLE, "max_latency:-1", "'enable' or 'disable' or 'max_latency:<µs>'"),
    (CRIO_IDLE, "max_latency:1e3", "'enable' or 'disable' or 'max_latency:<µs>'"),
    (CRIO_IDLE, "Disable", "'enable' or 'disable' or 'max_latency:<µs>'"),
    (CRIO_GOVERNOR, "Performance", "a governor's name"),
    (CRIO_GOVERNOR, "", "a governor's name"),
    (CRIO_GOVERNOR, "performance\n", "a governor's name"),
    (CRIO_GOVERNOR, "a" * 16, "a governor's name"),
    (QUIET_IDLE.pod_key, "disable", "'true' or 'false'"),
])
def test_a_value_not_understood_is_refused_naming_the_key(key: str, value: str,
                                                         expected: str) -> None:
    with pytest.raises(AnnotationValueError) as caught:
        of({key: value})
    assert caught.value.key == key
    assert str(caught.value).startswith(f"ns/p/app: annotation {key}={value!r} is invalid: "
                                        f"expected ")
    assert expected in str(caught.value)


def test_a_malformed_crio_value_is_refused_even_where_this_projects_key_decides() -> None:
    with pytest.raises(AnnotationValueError):
        of({CRIO_IRQ: "no", QUIET_IRQS.pod_key: "true"})


# -- who may ask, who gets it --------------------------------------------------------------------

def quiet_pod(name: str, qos: str = "guaranteed", **extra: str) -> PodFacts:
    return pod(name, qos=qos, annotations={CRIO_IRQ: "disable", CRIO_IDLE: "disable", **extra})


def test_an_integer_container_keeps_its_request_and_says_so() -> None:
    p = quiet_pod("dpdk")
    decided = classify(p, container("c", p, cpu_limit=2), Settings())
    assert decided.quiet == Quiet(irqs=True, idle_limit=0, keys=(CRIO_IRQ, CRIO_IDLE))
    assert decided.reason.endswith("quiet CPUs: interrupts off, idle states over 0 µs off by "
                                   f"{CRIO_IRQ}, {CRIO_IDLE}")


def test_a_shared_container_asking_is_ignored_with_a_reason() -> None:
    p = quiet_pod("web", qos="burstable")
    decided = classify(p, container("c", p), Settings())
    assert decided.quiet is None
    assert "quiet CPUs ignored" in decided.reason
    assert "no exclusive CPUs" in decided.reason


def test_asking_is_gated_like_a_pin() -> None:
    p = quiet_pod("dpdk")
    with pytest.raises(PinNotAllowedError) as caught:
        classify(p, container("c", p, cpu_limit=2), Settings(pin_namespaces=("storage",)))
    assert caught.value.key == CRIO_IRQ


def test_a_pin_and_a_mixed_containers_exclusive_part_are_quieted() -> None:
    e = CpusetEngine(DUAL_SOCKET, Settings())
    pinned = pod("pin", pins="5", annotations={QUIET_IRQS.pod_key: "true"})
    e.commit(e.plan_create(pinned, container("pin", pinned)))
    mixed = quiet_pod("mixed", **{MIXED.pod_key: "true"})
    e.commit(e.plan_create(mixed, container("mixed", mixed, cpu_limit=1.5)))
    state = quiet_state(e.ledger.entries.values())
    assert state.irq_cpus == CPUSet((5,)) | e.ledger.entries["mixed"].cpus
    assert len(e.ledger.entries["mixed"].cpus) == 1  # its exclusive part, not the pool
    assert violations(e.topology, e.ledger, e.settings) == []


# -- what must be quiet, refcount-exact ----------------------------------------------------------

def test_a_cpu_stays_quiet_while_any_holder_that_asked_is_live() -> None:
    e = CpusetEngine(DUAL_SOCKET, Settings())
    first = pod("a", pins="3", annotations={CRIO_IDLE: "max_latency:20"})
    second = pod("b", pins="3", annotations={CRIO_IDLE: "max_latency:5", CRIO_IRQ: "disable"})
    plain = pod("c", pins="3")
    for p in (first, second, plain):
        e.commit(e.plan_create(p, container(p.name, p)))
    state = quiet_state(e.ledger.entries.values())
    cpu = state.cpus[3]
    assert (cpu.idle_limit, cpu.idle, cpu.irqs) == (5, ("a", "b"), ("b",))
    e.commit(e.plan_release("b"))
    state = quiet_state(e.ledger.entries.values())
    assert (state.cpus[3].idle_limit, state.irq_cpus) == (20, CPUSet())
    e.commit(e.plan_release("a"))
    assert quiet_state(e.ledger.entries.values()).cpus == {}


def test_the_governor_of_a_cpu_is_its_first_holders_by_container_id() -> None:
    e = CpusetEngine(DUAL_SOCKET, Settings())
    for name, governor in (("z", "powersave"), ("a", "performance")):
        p = pod(name, pins="4", annotations={CRIO_GOVERNOR: governor})
        e.commit(e.plan_create(p, container(name, p)))
    state = quiet_state(e.ledger.entries.values())
    assert state.governors() == {4: "performance"}
    assert state.cpus[4].governors == ("a", "z")


def test_a_synchronize_rebuilds_the_requests_from_the_pods() -> None:
    e = CpusetEngine(DUAL_SOCKET, Settings())
    p = quiet_pod("dpdk")
    plan = e.plan_synchronize([p], [container("dpdk", p, cpu_limit=2, cpus_now="6,14")])
    e.commit(plan)
    state = quiet_state(e.ledger.entries.values())
    assert state.irq_cpus == CPUSet((6, 14))
    assert state.idle_limits() == {6: 0, 14: 0}


def test_a_container_demoted_to_shared_quiets_nothing() -> None:
    # A rebuild that finds no room for its exclusive CPUs leaves it on a pool: no CPU of its own.
    e = CpusetEngine(DUAL_SOCKET, Settings())
    whole = pod("whole", pins="0-15")
    late = quiet_pod("late")
    plan = e.plan_synchronize([whole, late], [
        container("whole", whole, cpus_now="0-15"),
        container("late", late, cpu_limit=2, cpus_now="0-15")])
    e.commit(plan)
    assert e.ledger.entries["late"].quiet is not None  # kept for the next rebuild
    assert e.ledger.entries["late"].cpus == CPUSet()
    assert quiet_state(e.ledger.entries.values()).cpus == {}


@pytest.mark.parametrize("annotations", [
    {CRIO_IDLE: "max_latency:soon", CRIO_IRQ: "disable"},
    {MIXED.pod_key: "perhaps"},
])
def test_a_running_pod_with_a_value_not_understood_is_rebuilt_without_it(
        annotations: dict[str, str]) -> None:
    # A pod written for CRI-O (whose values the admission policy does not check) or made
    # without the policy, running when the plugin starts: reported, never a failed rebuild.
    e = CpusetEngine(DUAL_SOCKET, Settings())
    p = pod("dpdk", annotations=annotations)
    plan = e.plan_synchronize([p], [container("dpdk", p, cpu_limit=2, cpus_now="6,14")])
    e.commit(plan)
    entry = e.ledger.entries["dpdk"]
    assert entry.cpus == CPUSet((6, 14))
    assert [type(problem) for problem in plan.problems] == [AnnotationValueError]
    irqs_asked = annotations.get(CRIO_IRQ) == "disable"
    assert entry.quiet == (Quiet(irqs=True, keys=(CRIO_IRQ,)) if irqs_asked else None)

