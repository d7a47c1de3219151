"""CPUs going offline and coming back: the engine re-places containers on the new topology.

The e2e machine cannot take CPUs offline (a Firecracker VM that may hang on CPU hot-unplug), so
the behaviour is proven here and in the adapter tests with a fake sysfs tree.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core import (
    AllocationOptions,
    CPUSet,
    CpusetEngine,
    Kind,
    PodFacts,
    Settings,
    StalePlanError,
    violations,
)
from cpuset_lab.machines import DUAL_SOCKET_HT, THIS_MACHINE_LIKE, build_topology
from tests.builders.facts import container, pod
from tests.unit.core.topologies import with_online

TOPOLOGY = build_topology(DUAL_SOCKET_HT)  # 16 CPUs, n and n+8 siblings; nodes 0-3,8-11 / rest
WHOLE_CORES = Settings(allocation=AllocationOptions(full_physical_cores=True))


def create(engine: CpusetEngine, p: PodFacts, cid: str, cpus: int | None = None) -> CPUSet:
    facts = container(cid, p, cpu_limit=cpus, name=cid)
    plan = engine.plan_create(p, facts)
    engine.commit(plan)
    assert plan.placement is not None
    return plan.placement.cpus


def test_an_integer_container_on_a_cpu_that_went_offline_moves_and_the_pool_shrinks() -> None:
    engine = CpusetEngine(TOPOLOGY)
    create(engine, pod("web", qos="burstable"), "app")
    held = create(engine, pod("db"), "pg", 2)
    gone = held.first()
    plan = engine.plan_topology_change(with_online(TOPOLOGY, (TOPOLOGY.online - CPUSet([gone]))
                                                   .format()))
    assert plan.problems == ()
    engine.commit(plan)
    moved = engine.ledger.entries["pg"].cpus
    assert len(moved) == 2
    assert gone not in moved
    assert gone not in engine.shared_pool()
    assert engine.shared_pool() == engine.topology.online - moved
    updates = {u.container_id: u for u in plan.updates}
    assert updates["pg"].cpus == moved
    assert gone not in updates["pg"].previous_cpus  # rollback never names an offline CPU
    assert updates["app"].cpus == engine.shared_pool()
    assert "topology change" in updates["pg"].reason
    assert violations(engine.topology, engine.ledger, engine.settings) == []


def test_a_pin_naming_a_cpu_that_went_offline_is_reported_and_keeps_its_online_part() -> None:
    engine = CpusetEngine(TOPOLOGY)
    create(engine, pod("io", qos="burstable", pins="3,4"), "io")
    plan = engine.plan_topology_change(with_online(TOPOLOGY, "0-3,5-15"))
    assert [(p.reason, p.subject) for p in plan.problems] == [("cpu-unavailable", "ns/io/io")]
    assert "4" in str(plan.problems[0])
    engine.commit(plan)
    assert engine.ledger.entries["io"].cpus == CPUSet.parse("3")
    assert engine.ledger.pinned == CPUSet.parse("3")
    engine.commit(engine.plan_topology_change(TOPOLOGY))  # CPU 4 returns to the pin
    assert engine.ledger.entries["io"].cpus == CPUSet.parse("3-4")
    assert engine.ledger.entries["io"].pins_asked is None


def test_a_pin_left_with_no_online_cpu_runs_shared_and_is_reported() -> None:
    engine = CpusetEngine(TOPOLOGY)
    create(engine, pod("io", qos="burstable", pins="4"), "io")
    plan = engine.plan_topology_change(with_online(TOPOLOGY, "0-3,5-15"))
    assert [p.reason for p in plan.problems] == ["cpu-unavailable"]
    engine.commit(plan)
    assert engine.ledger.entries["io"].kind is Kind.SHARED
    assert engine.placement("io") is not None
    back = engine.plan_topology_change(TOPOLOGY)  # CPU 4 returns: so does the pin
    engine.commit(back)
    assert engine.ledger.entries["io"].kind is Kind.ANNOTATED
    assert engine.ledger.entries["io"].cpus == CPUSet.parse("4")
    assert [(u.container_id, u.cpus.format()) for u in back.updates] == [("io", "4")]


def test_a_cpu_coming_back_online_grows_the_shared_pool() -> None:
    engine = CpusetEngine(with_online(TOPOLOGY, "0-14"))
    create(engine, pod("web", qos="burstable"), "app")
    create(engine, pod("io", qos="burstable", pins="2"), "io")
    plan = engine.plan_topology_change(TOPOLOGY)
    engine.commit(plan)
    assert engine.shared_pool() == CPUSet.parse("0-1,3-15")
    assert [(u.container_id, u.cpus.format()) for u in plan.updates] == [("app", "0-1,3-15")]
    assert create(engine, pod("db"), "pg", 1) <= TOPOLOGY.online  # decisions use CPU 15 again


def test_after_the_change_new_containers_never_get_the_offline_cpu() -> None:
    engine = CpusetEngine(build_topology(THIS_MACHINE_LIKE))  # CPUs 0-1
    engine.commit(engine.plan_topology_change(with_online(engine.topology, "1")))
    assert create(engine, pod("web", qos="burstable"), "app") == CPUSet.parse("1")
    with pytest.raises(Exception, match="not online"):
        create(engine, pod("io", qos="burstable", pins="0"), "io")


def test_a_topology_plan_made_before_another_decision_is_stale() -> None:
    engine = CpusetEngine(TOPOLOGY)
    plan = engine.plan_topology_change(with_online(TOPOLOGY, "0-14"))
    create(engine, pod("web", qos="burstable"), "app")
    with pytest.raises(StalePlanError):
        engine.commit(plan)
    assert engine.topology.online == TOPOLOGY.online


def test_an_unchanged_topology_changes_nothing() -> None:
    engine = CpusetEngine(TOPOLOGY)
    create(engine, pod("web", qos="burstable"), "app")
    create(engine, pod("db"), "pg", 2)
    plan = engine.plan_topology_change(TOPOLOGY)
    assert plan.updates == ()
    assert plan.problems == ()


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_online_change_leaves_the_invariants_and_places_nothing_offline(
        data: st.DataObject) -> None:
    engine = CpusetEngine(TOPOLOGY)
    for n in range(data.draw(st.integers(0, 8))):
        kind = data.draw(st.sampled_from(["shared", "integer", "pinned"]))
        try:
            if kind == "shared":
                create(engine, pod(f"s{n}", qos="burstable"), f"c{n}")
            elif kind == "integer":
                create(engine, pod(f"i{n}"), f"c{n}", data.draw(st.integers(1, 4)))
            else:
                pins = data.draw(st.sets(st.integers(0, 15), min_size=1, max_size=3))
                create(engine, pod(f"p{n}", qos="burstable", pins=CPUSet(pins).format()),
                       f"c{n}")
        except Exception:  # noqa: BLE001, S112 - refused admissions are fine here
            continue
    online = CPUSet(data.draw(st.sets(st.integers(0, 15), min_size=1)))
    before = engine.ledger
    plan = engine.plan_topology_change(dataclasses.replace(TOPOLOGY, online=online))
    engine.commit(plan)
    assert set(engine.ledger.entries) == set(before.entries)  # nobody is dropped
    assert engine.ledger.reserved <= online
    found = violations(engine.topology, engine.ledger, engine.settings)
    if any(p.reason == "shared-pool-exhausted" for p in plan.problems):
        found = [v for v in found if not v.startswith("7:")]  # reported, not hidden
    assert found == []
    for entry in engine.ledger.entries.values():
        was = before.entries[entry.container_id]
        if entry.kind is Kind.INTEGER:
            assert len(entry.cpus) == entry.request
            if was.cpus <= online:
                assert entry.cpus == was.cpus  # untouched when all its CPUs stayed
        if was.kind is Kind.ANNOTATED and entry.kind is Kind.ANNOTATED:
            assert entry.cpus == (was.pins_asked or was.cpus) & online
    for update in plan.updates:
        assert update.cpus <= online
        assert update.previous_cpus <= online


def test_a_shared_container_is_updated_off_a_cpu_that_went_offline() -> None:
    """Even where the kernel dropped the CPU from its cpuset already: the runtime's record of
    the container must stop naming it (and a rollback must not write it back)."""
    engine = CpusetEngine(TOPOLOGY)
    create(engine, pod("web", qos="burstable"), "app")
    plan = engine.plan_topology_change(with_online(TOPOLOGY, "0-14"))
    assert [(u.container_id, u.cpus.format(), u.previous_cpus.format())
            for u in plan.updates] == [("app", "0-14", "0-14")]


def test_a_demoted_integer_container_gets_exclusive_cpus_back_when_cpus_return() -> None:
    # Found in review: the demotion used to forget the request, so it stayed shared for good.
    no_smt = build_topology(dataclasses.replace(THIS_MACHINE_LIKE, cores_per_numa=8))
    engine = CpusetEngine(no_smt)
    create(engine, pod("web", qos="burstable"), "app")
    assert create(engine, pod("db"), "pg", 7) == CPUSet.parse("0-6")
    plan = engine.plan_topology_change(with_online(no_smt, "1-7"))
    engine.commit(plan)
    assert engine.ledger.entries["pg"].kind is Kind.SHARED  # 7 no longer fit beside the pool
    assert [p.subject for p in plan.problems] == ["ns/db/pg"]
    back = engine.plan_topology_change(no_smt)
    engine.commit(back)
    assert engine.ledger.entries["pg"].kind is Kind.INTEGER
    assert len(engine.ledger.entries["pg"].cpus) == 7
    assert violations(engine.topology, engine.ledger, engine.settings) == []


def test_whole_core_mode_re_places_a_container_a_returning_sibling_left_on_half_a_core() -> None:
    # Found in review: CPU 8 offline made {0} a whole core; when 8 came back the container
    # silently kept half a core beside the shared pool.
    engine = CpusetEngine(with_online(TOPOLOGY, "0-7,9-15"), WHOLE_CORES)
    create(engine, pod("web", qos="burstable"), "app")
    held = create(engine, pod("db"), "pg", 3)
    assert 0 in held
    plan = engine.plan_topology_change(TOPOLOGY)
    engine.commit(plan)
    # 3 CPUs cannot be whole SMT-2 cores: it stays where it is, and that is reported.
    assert engine.ledger.entries["pg"].cpus == held
    (problem,) = plan.problems
    assert problem.reason == "full-cores-unavailable"
    assert "no longer whole cores (a sibling came back online)" in str(problem)
    assert violations(engine.topology, engine.ledger, engine.settings) == []


def test_whole_core_mode_moves_a_half_core_container_onto_whole_cores_when_it_can() -> None:
    # An even request left on a lone thread plus a pair by an offline sibling: when the
    # sibling returns, it moves onto two whole cores.
    engine = CpusetEngine(with_online(TOPOLOGY, "0-7,10-15"), WHOLE_CORES)
    create(engine, pod("io", pins="2-7,10-15"), "io")  # every other core is pinned
    held = create(engine, pod("db"), "pg", 2)
    assert held == CPUSet.parse("0-1")  # cores {0,8} and {1,9} each have one online thread
    plan = engine.plan_topology_change(TOPOLOGY)
    engine.commit(plan)
    moved = engine.ledger.entries["pg"].cpus
    assert len(moved) == 2
    assert all((core & TOPOLOGY.online) <= moved for core in TOPOLOGY.cores_within(moved))
    assert plan.problems == ()
    assert violations(engine.topology, engine.ledger, engine.settings) == []
