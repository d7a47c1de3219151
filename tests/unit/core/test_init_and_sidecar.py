"""Init containers, sidecars and pods that go away mid-start, at the engine level.

NRI has no init/sidecar flag; the rule (``cpuset_core.reuse``) rests on what the runtime shows:
a completed container was stopped (and released) before the pod's next container is created.
"""

from __future__ import annotations

import pytest

from cpuset_core import (
    AllocationOptions,
    ContainerFacts,
    CPUSet,
    CpusetEngine,
    FullCoresUnavailableError,
    Kind,
    PodFacts,
    Settings,
    violations,
)
from cpuset_core.reuse import MAX_PODS, LeftBehind
from cpuset_lab.machines import DUAL_SOCKET_HT, THIS_MACHINE_LIKE, build_topology
from tests.builders.facts import container, pod

TOPOLOGY = build_topology(DUAL_SOCKET_HT)  # 16 CPUs, n and n+8 siblings; nodes 0-3,8-11 / rest


def integer(cid: str, of: PodFacts, cpus: int) -> ContainerFacts:
    """Container ``cid`` of ``of`` with a whole-CPU limit: an integer one in a Guaranteed pod."""
    return container(cid, of, cpu_limit=cpus, name=cid)


def shared(cid: str, of: PodFacts) -> ContainerFacts:
    """Container ``cid`` of ``of`` without a CPU limit: a shared one."""
    return container(cid, of, name=cid)


def create(engine: CpusetEngine, pod: PodFacts, facts: ContainerFacts) -> CPUSet:
    plan = engine.plan_create(pod, facts)
    engine.commit(plan)
    assert plan.placement is not None
    return plan.placement.cpus


def release(engine: CpusetEngine, cid: str) -> None:
    engine.commit(engine.plan_release(cid))


def test_an_app_container_lands_on_the_cpus_its_completed_init_container_held() -> None:
    engine = CpusetEngine(TOPOLOGY)
    blocker = pod("blocker")
    create(engine, blocker, integer("b", blocker, 2))  # takes the first whole core
    web = pod("web")
    init_cpus = create(engine, web, integer("init", web, 2))
    release(engine, "init")  # the init container exited: StopContainer
    release(engine, "b")  # the blocker's CPUs are now the allocator's first choice again
    assert engine.left_behind(web.sandbox_id) == init_cpus
    plan = engine.plan_create(web, integer("app", web, 2))
    assert plan.placement is not None
    assert plan.placement.cpus == init_cpus
    assert "reuses CPUs its pod's completed container(s) held" in plan.reason
    engine.commit(plan)
    assert engine.left_behind(web.sandbox_id) == CPUSet()  # taken: no longer left behind


def test_without_a_completed_container_the_allocator_decides_as_usual() -> None:
    reusing, fresh = CpusetEngine(TOPOLOGY), CpusetEngine(TOPOLOGY)
    web = pod("web")
    assert create(reusing, web, integer("app", web, 2)) == create(fresh, web,
                                                                   integer("app", web, 2))


def test_a_smaller_app_container_takes_the_best_shaped_part_of_what_init_left() -> None:
    engine = CpusetEngine(TOPOLOGY)
    web = pod("web")
    init_cpus = create(engine, web, integer("init", web, 4))
    release(engine, "init")
    app = create(engine, web, integer("app", web, 2))
    assert app <= init_cpus
    assert len(engine.topology.cores_within(app)) == 1  # one whole core, not two halves


def test_an_app_container_bigger_than_what_init_left_is_allocated_as_usual() -> None:
    engine, fresh = CpusetEngine(TOPOLOGY), CpusetEngine(TOPOLOGY)
    web = pod("web")
    create(engine, web, integer("init", web, 1))
    release(engine, "init")
    assert create(engine, web, integer("app", web, 4)) == create(fresh, web,
                                                                  integer("app", web, 4))


def test_cpus_another_pod_took_meanwhile_are_not_preferred() -> None:
    engine = CpusetEngine(TOPOLOGY)
    web, other = pod("web"), pod("other")
    init_cpus = create(engine, web, integer("init", web, 2))
    release(engine, "init")
    taken = create(engine, other, integer("o", other, 2))
    assert taken == init_cpus  # the allocator's first choice again
    assert engine.left_behind(web.sandbox_id) == CPUSet()
    app = create(engine, web, integer("app", web, 2))
    assert app.isdisjoint(taken)


def test_a_running_sidecar_keeps_its_cpus_while_the_app_container_gets_others() -> None:
    engine = CpusetEngine(TOPOLOGY)
    web = pod("web")
    init_cpus = create(engine, web, integer("init", web, 1))
    release(engine, "init")
    sidecar = create(engine, web, integer("sidecar", web, 1))  # restartable init: keeps running
    assert sidecar == init_cpus  # the sidecar itself may reuse the completed init's CPU
    app = create(engine, web, integer("app", web, 1))
    assert app.isdisjoint(sidecar)
    assert engine.ledger.entries["sidecar"].cpus == sidecar
    assert violations(engine.topology, engine.ledger, engine.settings) == []


def test_shared_and_pinned_init_containers_leave_nothing_behind() -> None:
    engine = CpusetEngine(TOPOLOGY)
    web = pod("web", qos="burstable")
    create(engine, web, shared("init", web))
    release(engine, "init")
    pinned = pod("io", pins="3")
    create(engine, pinned, shared("io", pinned))
    release(engine, "io")
    assert engine.left_behind(web.sandbox_id) == CPUSet()
    assert engine.left_behind(pinned.sandbox_id) == CPUSet()


def test_releasing_a_pod_frees_every_container_it_still_holds_including_unstarted_ones() -> None:
    engine = CpusetEngine(build_topology(THIS_MACHINE_LIKE))
    web, db = pod("web", qos="burstable"), pod("db")
    create(engine, web, shared("app", web))
    create(engine, db, integer("pg", db, 1))  # created, never started
    create(engine, db, shared("sidecar", db))
    plan = engine.plan_release_pod(db.sandbox_id)
    assert set(plan.result.entries) == {"app"}
    assert plan.shared_pool == engine.topology.online
    assert [u.container_id for u in plan.updates] == ["app"]  # the pool grows for the others
    engine.commit(plan)
    assert engine.plan_release_pod(db.sandbox_id).changes_ledger is False  # exactly once
    engine.forget_pod(db.sandbox_id)
    assert engine.left_behind(db.sandbox_id) == CPUSet()


def test_a_removed_pods_left_behind_cpus_are_forgotten() -> None:
    engine = CpusetEngine(TOPOLOGY)
    web = pod("web")
    create(engine, web, integer("init", web, 2))
    release(engine, "init")
    assert engine.left_behind(web.sandbox_id)
    engine.forget_pod(web.sandbox_id)
    assert engine.left_behind(web.sandbox_id) == CPUSet()


def test_the_memory_is_bounded_and_forgets_the_oldest_pod_first() -> None:
    engine = CpusetEngine(TOPOLOGY)
    memory = LeftBehind()
    for n in range(MAX_PODS + 2):
        p = pod(f"p{n}")
        plan = engine.plan_create(p, integer(f"c{n}", p, 1))
        engine.commit(plan)
        release_plan = engine.plan_release(f"c{n}")
        memory = memory.after(release_plan.base, release_plan.result)
        engine.commit(release_plan)
    assert len(memory.by_pod) == MAX_PODS
    assert memory.of("sb-p0") == memory.of("sb-p1") == CPUSet()
    assert memory.of(f"sb-p{MAX_PODS + 1}")


def test_a_stopped_container_that_is_re_created_under_the_same_pod_gets_its_cpus_back() -> None:
    """A crash-looping app container (same pod, next attempt) lands where it ran before."""
    engine = CpusetEngine(TOPOLOGY)
    blocker, web = pod("blocker"), pod("web")
    create(engine, blocker, integer("b", blocker, 1))
    first = create(engine, web, integer("app-0", web, 1))
    release(engine, "app-0")
    release(engine, "b")
    assert create(engine, web, integer("app-1", web, 1)) == first
    assert engine.ledger.entries["app-1"].kind is Kind.INTEGER


def test_with_full_physical_cores_a_half_core_reuse_is_refused_like_any_odd_request() -> None:
    whole_cores = Settings(allocation=AllocationOptions(full_physical_cores=True))
    engine = CpusetEngine(TOPOLOGY, whole_cores)
    web = pod("web")
    plan = engine.plan_create(web, integer("init", web, 2))
    engine.commit(plan)
    assert plan.placement is not None
    release(engine, "init")
    with pytest.raises(FullCoresUnavailableError):  # one thread of the warm core: refused
        engine.plan_create(web, integer("app", web, 1))
    whole = engine.plan_create(web, integer("app", web, 2))
    assert "reuses CPUs" in whole.reason
