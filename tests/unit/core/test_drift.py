"""Drift after a synchronize: what the corrections repair, and what they cannot."""

from __future__ import annotations

from cpuset_core import ContainerFacts, CPUSet, CpusetEngine, PodFacts
from cpuset_core.drift import Drifted, DriftReport, assess
from cpuset_lab.machines import DUAL_SOCKET_HT, THIS_MACHINE_LIKE, build_topology
from tests.builders.facts import container, pod

TOPOLOGY = build_topology(DUAL_SOCKET_HT)  # 16 CPUs


def facts(cid: str, of: PodFacts, cpus: str = "", mems: str = "") -> ContainerFacts:
    """Container ``cid`` of ``of``, running on ``cpus`` and ``mems`` as the runtime reports."""
    return container(cid, of, name=cid, cpus_now=cpus, mems_now=mems)


def test_containers_on_their_placement_are_not_drift() -> None:
    engine = CpusetEngine(TOPOLOGY)
    io, web = pod("io", pins="3"), pod("web", qos="burstable")
    containers = [facts("io", io, "3", "0"), facts("app", web, "0-2,4-15")]
    plan = engine.plan_synchronize([io, web], containers)
    assert assess(plan, [io, web], containers) == DriftReport()


def test_a_shared_container_on_a_pinned_cpu_is_repaired() -> None:
    engine = CpusetEngine(TOPOLOGY)
    io, web = pod("io", pins="3"), pod("web", qos="burstable")
    containers = [facts("io", io, "3", "0"), facts("app", web, "")]
    plan = engine.plan_synchronize([io, web], containers)
    report = assess(plan, [io, web], containers)
    assert report.unrepaired == ()
    assert report.repaired == (Drifted(container_id="app", subject="ns/web/app", reported="",
                                       expected=CPUSet.parse("0-2,4-15")),)


def test_a_pin_on_an_offline_cpu_is_unrepaired_and_says_why() -> None:
    engine = CpusetEngine(TOPOLOGY)
    io = pod("io", pins="3,99")
    containers = [facts("io", io, "0-15")]
    plan = engine.plan_synchronize([io], containers)
    report = assess(plan, [io], containers)
    assert [d.container_id for d in report.unrepaired] == ["io"]
    assert report.unrepaired[0].why == "cpu-unavailable"
    assert report.unrepaired[0].expected == CPUSet.parse("3")


def test_a_container_whose_pod_is_unknown_is_unrepaired() -> None:
    engine = CpusetEngine(TOPOLOGY)
    ghost = pod("ghost", qos="burstable")
    containers = [facts("orphan", ghost, "")]
    plan = engine.plan_synchronize([], containers)
    report = assess(plan, [], containers)
    assert [(d.container_id, d.why) for d in report.unrepaired] == [
        ("orphan", "its pod is unknown")]


def test_shared_containers_with_no_pool_left_are_unrepaired() -> None:
    engine = CpusetEngine(build_topology(THIS_MACHINE_LIKE))  # CPUs 0-1
    io, web = pod("io", pins="0-1"), pod("web", qos="burstable")
    containers = [facts("io", io, "0-1"), facts("app", web, "")]
    plan = engine.plan_synchronize([io, web], containers)
    report = assess(plan, [io, web], containers)
    assert [(d.container_id, d.expected) for d in report.unrepaired] == [("app", CPUSet())]


def test_corrections_that_failed_to_apply_move_to_unrepaired() -> None:
    engine = CpusetEngine(TOPOLOGY)
    io, web = pod("io", pins="3"), pod("web", qos="burstable")
    containers = [facts("io", io, "3", "0"), facts("app", web, ""), facts("db", web, "")]
    plan = engine.plan_synchronize([io, web], containers)
    report = assess(plan, [io, web], containers).with_failed({"db"}, "runtime said no")
    assert [d.container_id for d in report.repaired] == ["app"]
    assert [(d.container_id, d.why) for d in report.unrepaired] == [("db", "runtime said no")]
    assert report.with_failed({"nothing"}, "x") is report


def test_a_pinned_container_whose_memory_nodes_are_unset_is_repaired() -> None:
    engine = CpusetEngine(TOPOLOGY)
    io = pod("io", pins="3")
    containers = [facts("io", io, "3")]
    plan = engine.plan_synchronize([io], containers)
    assert [d.container_id for d in assess(plan, [io], containers).repaired] == ["io"]
