"""Quiet CPUs in the soak: the requests walked (``cpuset_soak/quiet.py``) read as the plugin's
documented rules read them, what the model predicts for them, ``--without quiet``, and the
invariant (``quiet_invariant``) on fake snapshots of the host's files: what it accepts while
quiet containers run and after they are gone, and each file it finds left changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_core import CPUSet
from cpuset_core.errors import AnnotationValueError
from cpuset_core.quiet_request import quiet_of
from cpuset_soak import quiet, requests
from cpuset_soak.args import parse_args
from cpuset_soak.model import INTEGER, SHARED, Node
from cpuset_soak.prediction import INVALID_ANNOTATION, NAMESPACE
from cpuset_soak.quiet_invariant import Wanted, expected, violations, wanted
from cpuset_soak.walk import Walk
from tests.unit.soak.soak_fixtures import TWO, node_with, pod, running

IRQ = Path("/proc/irq")
CPU = Path("/sys/devices/system/cpu")
DEFAULT = IRQ / "default_smp_affinity"


def irq(n: int) -> Path:
    return IRQ / str(n) / "smp_affinity_list"


def idle(cpu: int, state: int) -> Path:
    return CPU / f"cpu{cpu}/cpuidle/state{state}/disable"


BEFORE = {irq(24): "0-1", irq(36): "1", irq(99): "0-1", DEFAULT: "3",
          idle(0, 0): "0", idle(0, 1): "0", idle(1, 0): "0", idle(1, 1): "0"}
"""This host's shape: IRQ 99 refuses a write (kernel-managed), state0 polls (latency 0)."""
ACCEPTING = frozenset({irq(24), irq(36)})
LATENCY = {idle(c, s): s for c in (0, 1) for s in (0, 1)}


def check(now: dict[Path, str], want: Wanted, online: CPUSet = TWO) -> list[str]:
    return violations(BEFORE, now, accepting=ACCEPTING, latency=LATENCY, online=online,
                      want=want)


def quiet_pod(name: str, cid: str, cpus: str, annotations: dict[str, str],
              kind: str = INTEGER) -> Node:
    made = pod(name, running(kind, cid, len(CPUSet.parse(cpus, allow_empty=True)), cpus),
               namespace="storage")
    made.requests = annotations
    return node_with(TWO, made)


# -- the requests, read as the plugin reads them ------------------------------------------------


@pytest.mark.parametrize("annotations", quiet.VARIANTS)
def test_each_walked_request_asks_what_the_plugins_own_reading_says(
        annotations: dict[str, str]) -> None:
    theirs = quiet_of(annotations, "app", "storage/p/app")
    ours = quiet.asked(annotations)
    assert ours.irqs == (theirs is not None and theirs.irqs)
    assert ours.idle_bound == (theirs.idle_limit if theirs is not None else None)
    assert quiet.refusal(annotations) is None


@pytest.mark.parametrize("annotations", quiet.REFUSED)
def test_each_walked_bad_value_is_refused_as_an_invalid_annotation(
        annotations: dict[str, str]) -> None:
    assert quiet.refusal(annotations) == INVALID_ANNOTATION
    with pytest.raises(AnnotationValueError) as refused:
        quiet_of(annotations, "app", "storage/p/app")
    assert refused.value.reason == INVALID_ANNOTATION


def test_a_quiet_request_is_refused_for_a_bad_value_before_its_namespace_or_its_fit() -> None:
    node = node_with(TWO)
    bad = pod("p", namespace="default")
    bad.requests = {quiet.CRIO_IDLE: "off"}
    node.namespaces = ("storage",)
    assert requests.predict(node, bad, requests.QUIET_REQUEST, 9).reasons == {
        INVALID_ANNOTATION}
    bad.requests = {quiet.CRIO_IRQ: "disable"}
    assert requests.predict(node, bad, requests.QUIET_REQUEST, 1).reasons == {NAMESPACE}
    assert requests.predict(node, bad, requests.QUIET_REQUEST, 0).reasons == {NAMESPACE}


def test_a_quiet_request_is_an_integer_container_or_a_shared_one_without_whole_cpus() -> None:
    node = node_with(TWO)
    assert requests.qos(requests.QUIET_REQUEST, 1) == "Guaranteed"
    assert requests.qos(requests.QUIET_REQUEST, 0) == "Burstable"
    assert requests.kind_of(node, requests.QUIET_REQUEST, 1) == INTEGER
    assert requests.kind_of(node, requests.QUIET_REQUEST, 0) == SHARED


def test_a_walk_asks_for_quiet_cpus_in_both_vocabularies_and_never_on_a_faulty_runc() -> None:
    walk = Walk(3, node_with(TWO))
    drawn = [walk._create_quiet_request() for _ in range(200)]
    made = [op for ops in drawn if ops for op in ops if op["kind"] == "create"]
    keys = {key for op in made for key in op["annotations"]}
    assert {quiet.CRIO_IRQ, quiet.CRIO_IDLE} <= keys
    assert any(key.startswith(quiet.OURS_IRQS) for key in keys)
    assert {op["handler"] for op in made} == {""}
    assert any(quiet.refusal(op["annotations"]) for op in made)
    assert {op["cpus"] for op in made} >= {0, 1}


def test_on_a_node_with_no_free_cpu_a_quiet_request_mostly_deletes_a_pod_first() -> None:
    walk = Walk(3, node_with(TWO, pod("big", running(INTEGER, "c1", 2, "0-1"))))
    drawn = [walk._create_quiet_request() for _ in range(50)]
    assert any(ops and ops[0] == {"kind": "delete", "pod": "big"} for ops in drawn)
    assert all(ops and ops[-1]["kind"] == "create" for ops in drawn)


def test_without_quiet_the_walk_never_draws_a_quiet_request() -> None:
    args = parse_args(["--without", "quiet,burst"], "soak")
    assert args.without == {"create-quiet-request", "burst"}
    walk = Walk(5, node_with(TWO), without=args.without)
    assert "create-quiet-request" not in walk.kinds


# -- what the running quiet containers want ----------------------------------------------------


def test_running_integer_containers_that_ask_want_their_kernel_cpus_quiet() -> None:
    node = quiet_pod("p", "c1", "1", {quiet.CRIO_IRQ: "disable", quiet.CRIO_IDLE: "disable"})
    assert wanted(node, {"c1": CPUSet([1])}) == Wanted(CPUSet([1]), {1: 0})


def test_a_shared_container_a_refused_one_and_one_without_a_cgroup_want_nothing() -> None:
    shared = quiet_pod("p", "c1", "", {quiet.CRIO_IRQ: "disable"}, kind=SHARED)
    assert wanted(shared, {"c1": TWO}) == Wanted()
    refused = quiet_pod("p", "c1", "1", {quiet.CRIO_IDLE: "off"})
    assert wanted(refused, {"c1": CPUSet([1])}) == Wanted()
    assert wanted(quiet_pod("p", "c1", "1", {quiet.CRIO_IRQ: "disable"}), {}) == Wanted()


def test_several_holders_keep_the_lowest_idle_bound() -> None:
    node = quiet_pod("p", "c1", "1", {quiet.CRIO_IDLE: "max_latency:5"})
    other = pod("q", running(INTEGER, "c2", 1, "1"), namespace="storage")
    other.requests = {quiet.CRIO_IDLE: "max_latency:2"}
    node.pods["q"] = other
    assert wanted(node, {"c1": CPUSet([1]), "c2": CPUSet([1])}).idle_bounds == {1: 2}


# -- the invariant on fake snapshots -----------------------------------------------------------


def test_with_no_quiet_container_the_host_must_be_as_before_the_walk() -> None:
    assert check(dict(BEFORE), Wanted()) == []
    left = check({**BEFORE, irq(24): "0", idle(1, 1): "1"}, Wanted())
    assert len(left) == 2
    assert "/proc/irq/24/smp_affinity_list is '0', expected '0-1'" in left[0]
    assert "cpu1/cpuidle/state1/disable is '1', expected '0'" in left[1]


def test_a_quiet_cpu_leaves_every_accepting_irq_and_the_default_affinity() -> None:
    want = Wanted(CPUSet([1]), {1: 0})
    quiet_now = {**BEFORE, irq(24): "0", irq(36): "0", DEFAULT: "1", idle(1, 1): "1"}
    assert check(quiet_now, want) == []
    # IRQ 36 had only CPU 1: it goes where no CPU is quiet; IRQ 99 (managed) is left alone.
    wants = expected(BEFORE, accepting=ACCEPTING, latency=LATENCY, online=TWO, want=want)
    assert (wants[irq(36)], wants[DEFAULT]) == ("0", "1")
    still = check({**quiet_now, irq(24): "0-1"}, want)
    assert len(still) == 1
    assert "irq/24" in still[0]
    assert "interrupts off 1" in still[0]


def test_only_states_past_the_bound_and_only_on_quiet_cpus_are_disabled() -> None:
    want = Wanted(idle_bounds={0: 0})
    assert check({**BEFORE, idle(0, 1): "1"}, want) == []
    assert len(check({**BEFORE, idle(0, 1): "1", idle(0, 0): "1"}, want)) == 1  # polling
    assert len(check({**BEFORE, idle(0, 1): "1", idle(1, 1): "1"}, want)) == 1  # other CPU
    assert len(check(dict(BEFORE), want)) == 1  # not disabled at all
    # A bound at or above every latency disables nothing.
    assert check(dict(BEFORE), Wanted(idle_bounds={0: 1})) == []


def test_with_every_online_cpu_quiet_interrupts_stay_where_they_were() -> None:
    assert check(dict(BEFORE), Wanted(TWO)) == []
    assert len(check({**BEFORE, irq(24): "0"}, Wanted(TWO))) == 1


def test_masks_and_lists_are_compared_as_sets_and_irqs_gone_since_are_nobodys() -> None:
    now = {**BEFORE, irq(24): "0,1", DEFAULT: "00000003"}
    del now[irq(36)]
    assert check(now, Wanted()) == []


def test_the_pm_qos_resume_latency_stays_its_original_on_the_host_path() -> None:
    """The soak's plugin runs as root with CAP_SYS_ADMIN: it carries a bound in the states'
    ``disable``, never in the PM QoS file (the capability-less pod's way), which the
    invariant then holds to its original."""
    qos = CPU / "cpu1/power/pm_qos_resume_latency_us"
    before = {**BEFORE, qos: "0"}
    want = Wanted(idle_bounds={1: 0})
    assert violations(before, {**before, idle(1, 1): "1"}, accepting=ACCEPTING,
                      latency=LATENCY, online=TWO, want=want) == []
    [left] = violations(before, {**before, idle(1, 1): "1", qos: "n/a"}, accepting=ACCEPTING,
                        latency=LATENCY, online=TWO, want=want)
    assert "pm_qos_resume_latency_us is 'n/a', expected '0'" in left
