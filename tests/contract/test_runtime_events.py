"""Contract of the RuntimeEvents port (what drives the engine), for every implementation."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cpuset_core import (
    ContainerFacts,
    CpusetEngine,
    PodFacts,
    RuntimeEvents,
    StalePlanError,
)
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology

IMPLEMENTATIONS: dict[str, Callable[[], RuntimeEvents]] = {
    "engine": lambda: CpusetEngine(build_topology(DUAL_SOCKET_HT)),
}

POD = PodFacts(sandbox_id="s1", namespace="ns", name="db", cgroup_parent="/kubepods/pod1")
INTEGER = ContainerFacts(id="c1", sandbox_id="s1", name="main", cpu_quota=200_000,
                         cpu_period=100_000)


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def events(request: pytest.FixtureRequest) -> RuntimeEvents:
    return IMPLEMENTATIONS[request.param]()


def test_planning_changes_nothing_until_commit(events: RuntimeEvents) -> None:
    first = events.plan_create(POD, INTEGER)
    second = events.plan_create(POD, INTEGER)
    assert first.placement == second.placement
    assert first.base is second.base


def test_a_committed_create_is_seen_by_the_next_plan(events: RuntimeEvents) -> None:
    plan = events.plan_create(POD, INTEGER)
    events.commit(plan)
    other = ContainerFacts(id="c2", sandbox_id="s1", name="side", cpu_quota=200_000,
                           cpu_period=100_000)
    second = events.plan_create(POD, other)
    assert second.placement is not None
    assert plan.placement is not None
    assert second.placement.cpus.isdisjoint(plan.placement.cpus)


def test_a_plan_made_before_another_commit_is_refused(events: RuntimeEvents) -> None:
    stale = events.plan_create(POD, INTEGER)
    events.commit(events.plan_synchronize([POD], []))
    with pytest.raises(StalePlanError):
        events.commit(stale)


def test_releasing_an_unknown_container_is_an_empty_plan(events: RuntimeEvents) -> None:
    plan = events.plan_release("unknown")
    assert plan.updates == ()
    assert plan.result is plan.base


def test_release_twice_releases_once(events: RuntimeEvents) -> None:
    events.commit(events.plan_create(POD, INTEGER))
    events.commit(events.plan_release("c1"))
    again = events.plan_release("c1")
    assert again.updates == ()
    assert again.result is again.base


def test_a_resize_plan_places_the_container_and_changes_nothing_until_commit(
        events: RuntimeEvents) -> None:
    events.commit(events.plan_create(POD, INTEGER))
    bigger = ContainerFacts(id="c1", sandbox_id="s1", name="main", cpu_quota=400_000,
                            cpu_period=100_000)
    first = events.plan_resize(POD, bigger)
    second = events.plan_resize(POD, bigger)
    assert first.placement is not None
    assert len(first.placement.cpus) == 4
    assert first.placement == second.placement
    assert first.base is second.base


def test_a_synchronize_keeping_unlisted_containers_keeps_one_the_report_misses(
        events: RuntimeEvents) -> None:
    created = events.plan_create(POD, INTEGER)
    events.commit(created)
    kept = events.plan_synchronize([], [], keep_unlisted=True)
    assert kept.result.placement("c1", kept.shared_pool) == created.placement
    assert "c1" not in events.plan_synchronize([], []).result
