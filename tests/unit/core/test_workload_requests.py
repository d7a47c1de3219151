"""Per-workload requests (issue 32): system pods on the reserved CPUs, opting out of exclusive
CPUs, and mixed exclusive + shared containers; each annotation resolved per container over per
pod, refused in the same words wherever it is wrong.

DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8 are siblings.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cpuset_core import (
    AdmissionError,
    AnnotationConflictError,
    AnnotationValueError,
    IsolatedCpusUnavailableError,
    PinNotAllowedError,
    ReservedCpusUnavailableError,
    Unmet,
    violations,
)
from cpuset_core.classify import classify
from cpuset_core.cpuset import CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.model import ContainerFacts, Kind, PodFacts
from cpuset_core.quota import ExclusiveQuota, cpu_quota
from cpuset_core.settings import Settings
from cpuset_core.workload import ISOLATED, MIXED, RESERVED, SHARED, Requests
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET, with_online

RESERVED_CPUS = CPUSet((0, 8))
SYSTEM = Settings(system_reserved=RESERVED_CPUS, reserved_namespaces=("kube-system",))


def in_namespace(name: str, namespace: str, **kwargs: object) -> PodFacts:
    return replace(pod(name, **kwargs), namespace=namespace)  # type: ignore[arg-type]


def engine(settings: Settings = SYSTEM) -> CpusetEngine:
    return CpusetEngine(DUAL_SOCKET, settings)


def admitted(e: CpusetEngine, p: PodFacts, c: ContainerFacts) -> str:
    """Admit ``c`` and return its CPUs as a list."""
    plan = e.plan_create(p, c)
    e.commit(plan)
    assert plan.placement is not None
    assert violations(e.topology, e.ledger, e.settings) == []
    return plan.placement.cpus.format()


# -- the annotations -----------------------------------------------------------------------------

def test_a_containers_annotation_wins_over_its_pods() -> None:
    annotations = {RESERVED.pod_key: "true", RESERVED.container_prefix + "app": "false"}
    assert RESERVED.resolve(annotations, "app", "s") == (False, RESERVED.container_prefix + "app")
    assert RESERVED.resolve(annotations, "sidecar", "s") == (True, RESERVED.pod_key)
    assert RESERVED.resolve({}, "app", "s") is None


@pytest.mark.parametrize("value", ["yes", "True", "1", ""])
def test_a_value_other_than_true_or_false_is_refused_naming_the_key(value: str) -> None:
    key = SHARED.container_prefix + "app"
    with pytest.raises(AnnotationValueError) as caught:
        Requests.of({key: value}, "app", "ns/p/app")
    assert str(caught.value) == (f"ns/p/app: annotation {key}={value!r} is invalid: expected "
                                 f"'true' or 'false'")


def test_a_malformed_pod_value_is_refused_even_for_a_container_whose_own_key_decides() -> None:
    # The admission policy refuses such a pod at the API server; the node agrees (a hypothesis
    # draw found the two apart when every container overrode the pod's malformed key).
    annotations = {SHARED.pod_key: "yes", SHARED.container_prefix + "app": "true"}
    with pytest.raises(AnnotationValueError) as caught:
        SHARED.resolve(annotations, "app", "ns/p/app")
    assert caught.value.key == SHARED.pod_key


def test_declining_and_asking_for_exclusive_cpus_at_once_is_refused() -> None:
    p = pod("p", annotations={SHARED.pod_key: "true", MIXED.container_prefix + "main": "true"})
    with pytest.raises(AnnotationConflictError) as caught:
        classify(p, container("c", p, cpu_limit=2.5), Settings())
    assert caught.value.reason == "invalid-annotation"
    assert "shared-cpus.nri-cpuset.io/pod and mixed-cpus.nri-cpuset.io/container.main" in str(
        caught.value)


def test_a_bad_request_value_on_any_container_refuses_it_even_when_pinned() -> None:
    p = pod("p", pins="2", annotations={MIXED.pod_key: "sure"})
    with pytest.raises(AnnotationValueError):
        engine().plan_create(p, container("c", p))


# -- the reserved CPUs ---------------------------------------------------------------------------

def test_a_system_pod_runs_on_the_reserved_cpus_whatever_its_qos() -> None:
    e = engine()
    for qos, limit in (("burstable", None), ("guaranteed", 2.0)):
        p = in_namespace(f"proxy-{qos}", "kube-system", qos=qos)
        assert admitted(e, p, container(f"c-{qos}", p, cpu_limit=limit)) == "0,8"
        entry = e.ledger.entries[f"c-{qos}"]
        assert (entry.kind, entry.label) == (Kind.SHARED, "reserved")
    assert e.ledger.shared == ()  # not updated with the shared pool
    assert e.ledger.exclusive == CPUSet()


def test_other_namespaces_stay_on_the_shared_pool_and_a_system_pod_may_opt_out() -> None:
    e = engine()
    web = pod("web", qos="burstable")
    assert admitted(e, web, container("web", web)) == "0-15"  # reserved CPUs are not strict
    out = in_namespace("cni", "kube-system", qos="burstable",
                       annotations={RESERVED.pod_key: "false"})
    assert admitted(e, out, container("cni", out)) == "0-15"


def test_a_pin_wins_over_the_reserved_namespace() -> None:
    p = in_namespace("pinned", "kube-system", pins="3")
    assert admitted(engine(), p, container("c", p)) == "3"


def test_any_pod_may_ask_for_the_reserved_cpus_where_it_may_pin() -> None:
    p = pod("agent", qos="burstable", annotations={RESERVED.container_prefix + "main": "true"})
    e = engine()
    assert admitted(e, p, container("c", p)) == "0,8"
    assert "reserved-cpus.nri-cpuset.io/container.main=true" in e.ledger.entries["c"].reason
    closed = engine(replace(SYSTEM, pin_namespaces=("storage",)))
    with pytest.raises(PinNotAllowedError) as caught:
        closed.plan_create(p, container("c", p))
    assert "may not use the annotation reserved-cpus.nri-cpuset.io/container.main" in str(
        caught.value)


def test_asking_for_reserved_cpus_where_none_is_online_is_refused_or_best_effort() -> None:
    p = pod("agent", qos="burstable", annotations={RESERVED.pod_key: "true"})
    best = engine(Settings())
    assert admitted(best, p, container("c", p)) == "0-15"
    assert best.ledger.entries["c"].reason == (
        "reserved-cpus.nri-cpuset.io/pod=true, but none is online: on the shared pool "
        "(best effort)")
    refusing = engine(Settings(unmet_requests=Unmet.REFUSE))
    with pytest.raises(ReservedCpusUnavailableError) as caught:
        refusing.plan_create(p, container("c", p))
    assert str(caught.value) == ("ns/agent/main: reserved-cpus.nri-cpuset.io/pod=true asks for "
                                 "the reserved CPUs, and none is online (reserved: none)")
    assert refusing.ledger.entries == {}


def test_a_container_stranded_off_the_reserved_cpus_follows_the_shared_pool() -> None:
    # No reserved CPU: best effort put it on the shared pool, so the pool's changes reach it.
    e = engine(Settings())
    p = pod("agent", qos="burstable", annotations={RESERVED.pod_key: "true"})
    admitted(e, p, container("agent", p))
    db = pod("db")
    plan = e.plan_create(db, container("db", db, cpu_limit=2))
    [update] = plan.updates
    assert (update.container_id, update.previous_cpus.format()) == ("agent", "0-15")
    assert update.cpus == plan.shared_pool


def test_system_pods_follow_the_reserved_cpus_when_one_goes_offline() -> None:
    e = engine()
    p = in_namespace("proxy", "kube-system", qos="burstable")
    admitted(e, p, container("proxy", p))
    plan = e.plan_topology_change(with_online(DUAL_SOCKET, "0-7,9-15"))
    [update] = [u for u in plan.updates if u.container_id == "proxy"]
    # CPU 8 is gone: the rollback target is what is left of the old set.
    assert (update.previous_cpus.format(), update.cpus.format()) == ("0", "0")
    assert update.reason == "topology change: runtime reports cpus 0,8"


# -- opting out of exclusive CPUs ----------------------------------------------------------------

def test_an_integer_container_that_opts_out_runs_on_the_shared_pool() -> None:
    p = pod("bursty", annotations={SHARED.pod_key: "true"})
    e = engine(Settings())
    assert admitted(e, p, container("c", p, cpu_limit=4)) == "0-15"
    entry = e.ledger.entries["c"]
    assert (entry.kind, entry.request) == (Kind.SHARED, 0)
    assert entry.reason == ("Guaranteed pod, 4 whole CPU(s), on the shared pool by "
                            "shared-cpus.nri-cpuset.io/pod=true")


# -- mixed exclusive + shared --------------------------------------------------------------------

def mixed_pod(name: str = "mixed") -> PodFacts:
    return pod(name, annotations={MIXED.pod_key: "true"})


def test_a_mixed_container_gets_its_whole_cpus_exclusive_and_the_shared_pool() -> None:
    e = engine(Settings())
    p = mixed_pod()
    plan = e.plan_create(p, container("m", p, cpu_limit=2.5))
    e.commit(plan)
    entry = e.ledger.entries["m"]
    assert (entry.kind, entry.label, entry.request, entry.cpus.format()) == (
        Kind.INTEGER, "mixed", 2, "0,8")
    assert plan.placement is not None
    assert plan.placement.cpus == CPUSet(range(16))  # its own two and the pool (the rest)
    assert e.shared_pool() == CPUSet(range(16)) - CPUSet((0, 8))
    # Its limit is 2.5 CPUs over more than that: the kubelet's quota stays.
    assert cpu_quota(plan.placement, ExclusiveQuota.UNLIMITED) is None
    assert violations(e.topology, e.ledger, e.settings) == []


def test_a_mixed_container_follows_the_shared_pool_with_its_own_cpus() -> None:
    e = engine(Settings())
    p = mixed_pod()
    admitted(e, p, container("m", p, cpu_limit=2.5))
    db = pod("db")
    plan = e.plan_create(db, container("db", db, cpu_limit=2))
    [update] = plan.updates
    assert update.container_id == "m"
    assert update.previous_cpus.format() == "0-15"
    assert update.cpus == plan.shared_pool | CPUSet((0, 8))
    e.commit(plan)
    assert not (e.placement("m").cpus & e.ledger.entries["db"].cpus)  # type: ignore[union-attr]


def test_a_mixed_container_moved_by_a_pin_gets_one_update_with_its_rollback_target() -> None:
    e = engine(Settings())
    p = mixed_pod()
    admitted(e, p, container("m", p, cpu_limit=2.5))  # 0,8
    pin = pod("pin", pins="0")
    plan = e.plan_create(pin, container("pin", pin))
    [update] = [u for u in plan.updates if u.container_id == "m"]
    own = plan.result.entries["m"].cpus
    assert 0 not in own
    assert update.cpus == own | plan.shared_pool
    assert update.previous_cpus == CPUSet(range(16))  # 0,8 and the old pool
    e.commit(plan)
    assert violations(e.topology, e.ledger, e.settings) == []


@pytest.mark.parametrize(("p", "limit", "why"), [
    (mixed_pod(), 0.5, "mixed-cpus.nri-cpuset.io/pod ignored: its limit 500m is under one CPU"),
    (pod("b", qos="burstable", annotations={MIXED.pod_key: "true"}), 2.5,
     "mixed-cpus.nri-cpuset.io/pod ignored: not a Guaranteed container with a CPU limit"),
    (mixed_pod(), 3.0, "Guaranteed pod, 3 whole CPU(s) (mixed-cpus.nri-cpuset.io/pod: whole "
                       "CPUs are exclusive only)"),
])
def test_mixed_is_only_for_a_guaranteed_fraction_of_one_cpu_or_more(
        p: PodFacts, limit: float, why: str) -> None:
    decided = classify(p, container("c", p, cpu_limit=limit), Settings())
    assert not decided.with_shared
    assert why in decided.reason


def test_a_mixed_container_judged_by_its_shares_without_quota() -> None:
    p = mixed_pod()
    facts = replace(container("c", p), cpu_shares=2560)  # 2500m, --cpu-cfs-quota=false
    decided = classify(p, facts, Settings())
    assert (decided.label, decided.request) == ("mixed", 2)


def test_a_resize_from_mixed_to_whole_cpus_re_places_it_exclusive_only() -> None:
    e = engine(Settings())
    p = mixed_pod()
    admitted(e, p, container("m", p, cpu_limit=2.5))
    plan = e.plan_resize(p, container("m", p, cpu_limit=2.0))
    e.commit(plan)
    placed = e.placement("m")
    assert placed is not None
    assert (placed.with_shared, len(placed.cpus)) == (False, 2)


def test_a_synchronize_keeps_a_mixed_containers_own_cpus_where_it_runs() -> None:
    p, web = mixed_pod(), pod("web", qos="burstable")
    pool = (CPUSet(range(16)) - CPUSet((5, 13))).format()
    facts = [container("m", p, cpu_limit=2.5, cpus_now="0-15"),
             container("web", web, cpus_now=pool)]
    e = engine(Settings())
    plan = e.plan_synchronize([p, web], facts)
    assert plan.problems == ()
    assert plan.updates == ()
    assert plan.result.entries["m"].cpus == CPUSet((5, 13))


# -- isolated CPUs on request --------------------------------------------------------------------

ISOLATING = replace(DUAL_SOCKET, isolated=CPUSet.parse("6-7,14-15"))  # node 1's last two cores


def isolated_pod(name: str, value: str = "true", **kwargs: object) -> PodFacts:
    return pod(name, annotations={ISOLATED.pod_key: value}, **kwargs)  # type: ignore[arg-type]


def test_a_container_asking_for_isolated_cpus_gets_only_isolated_ones() -> None:
    e = CpusetEngine(ISOLATING, Settings())
    p = isolated_pod("dpdk")
    assert admitted(e, p, container("dpdk", p, cpu_limit=2)) == "6,14"  # one whole core
    assert e.ledger.entries["dpdk"].isolated is True
    assert "isolated CPUs by isolated-cpus.nri-cpuset.io/pod=true" in e.ledger.entries[
        "dpdk"].reason
    other = pod("db")
    placed = CPUSet.parse(admitted(e, other, container("db", other, cpu_limit=4)))
    assert placed.isdisjoint(ISOLATING.isolated)  # one not asking never gets them


def test_a_container_saying_no_avoids_isolated_cpus_even_where_all_may_have_them() -> None:
    e = CpusetEngine(ISOLATING, Settings(exclusive_on_isolated=True))
    p = isolated_pod("web", "false")
    facts = container("web", p, cpu_limit=12)  # the 12 CPUs that are not isolated
    assert CPUSet.parse(admitted(e, p, facts)).isdisjoint(ISOLATING.isolated)
    another = isolated_pod("more", "false")
    with pytest.raises(AdmissionError):
        e.plan_create(another, container("more", another, cpu_limit=1))


def test_too_few_isolated_cpus_is_best_effort_or_refused() -> None:
    p = isolated_pod("dpdk")
    best = CpusetEngine(ISOLATING, Settings())
    placed = CPUSet.parse(admitted(best, p, container("dpdk", p, cpu_limit=6)))
    assert placed.isdisjoint(ISOLATING.isolated)
    assert ("isolated-cpus.nri-cpuset.io/pod=true, but 4 of the isolated CPUs (6-7,14-15) are "
            "free: not isolated (best effort); NUMA node 0") in best.ledger.entries["dpdk"].reason
    assert best.ledger.entries["dpdk"].isolated is None
    refusing = CpusetEngine(ISOLATING, Settings(unmet_requests=Unmet.REFUSE))
    with pytest.raises(IsolatedCpusUnavailableError) as caught:
        refusing.plan_create(p, container("dpdk", p, cpu_limit=6))
    assert str(caught.value) == ("ns/dpdk/main: asks for 6 isolated CPU(s) "
                                 "(isolated-cpus.nri-cpuset.io), and 4 of the isolated CPUs "
                                 "(6-7,14-15) are free")


def test_isolated_cpus_are_gated_like_a_pin_and_ignored_without_exclusive_cpus() -> None:
    p = isolated_pod("dpdk")
    closed = CpusetEngine(ISOLATING, Settings(pin_namespaces=("storage",)))
    with pytest.raises(PinNotAllowedError):
        closed.plan_create(p, container("dpdk", p, cpu_limit=2))
    web = isolated_pod("web", qos="burstable")
    decided = classify(web, container("web", web), Settings())
    assert decided.isolated is None
    assert "isolated-cpus.nri-cpuset.io/pod ignored: no exclusive CPUs" in decided.reason


def test_a_pin_moves_an_isolated_container_to_other_isolated_cpus_only() -> None:
    e = CpusetEngine(ISOLATING, Settings())
    p = isolated_pod("dpdk")
    admitted(e, p, container("dpdk", p, cpu_limit=2))  # 6,14
    pin = pod("pin", pins="6")
    plan = e.plan_create(pin, container("pin", pin))
    e.commit(plan)
    moved = e.ledger.entries["dpdk"].cpus
    assert moved <= ISOLATING.isolated
    assert 6 not in moved
    assert violations(e.topology, e.ledger, e.settings) == []


def test_a_synchronize_keeps_an_isolated_containers_cpus() -> None:
    p = isolated_pod("dpdk")
    e = CpusetEngine(ISOLATING, Settings())
    plan = e.plan_synchronize([p], [container("dpdk", p, cpu_limit=2, cpus_now="7,15")])
    assert plan.updates == ()
    assert plan.result.entries["dpdk"].cpus == CPUSet((7, 15))


def test_cpus_a_mixed_container_gives_to_the_pool_do_not_drain_forever() -> None:
    # It still runs on them by right (they are in the pool): were they draining, no verifier
    # pass could ever show it left them, and no exclusive owner could have them again.
    e = CpusetEngine(DUAL_SOCKET, Settings(), confirm_releases=True)
    p = mixed_pod()
    admitted(e, p, container("m", p, cpu_limit=2.5))  # 0,8
    pin = pod("pin", pins="0")
    e.commit(e.plan_create(pin, container("pin", pin)))
    assert 8 not in e.ledger.exclusive  # it gave CPU 8 up with 0: 8 is in the pool now
    assert 8 in e.shared_pool()
    assert e.draining == CPUSet()  # and free for the next exclusive owner


def test_a_container_placed_off_the_isolated_cpus_for_want_of_them_resizes_where_it_runs() -> None:
    # Found by the model-based test: a shrink kept its ordinary CPUs but called them isolated.
    e = CpusetEngine(DUAL_SOCKET, Settings())  # no isolated CPU at all: best effort
    p = isolated_pod("dpdk")
    admitted(e, p, container("dpdk", p, cpu_limit=2))
    e.commit(e.plan_resize(p, container("dpdk", p, cpu_limit=1)))
    entry = e.ledger.entries["dpdk"]
    assert (len(entry.cpus), entry.isolated) == (1, None)
    assert violations(e.topology, e.ledger, e.settings) == []
