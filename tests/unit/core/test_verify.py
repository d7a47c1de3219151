"""The kernel's view against the ledger: which containers differ, and why."""

from __future__ import annotations

from cpuset_core import CPUSet, CpusetEngine
from cpuset_core.verify import Mismatch, Observed, mismatches
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from tests.builders.facts import container, pod

TOPOLOGY = build_topology(DUAL_SOCKET_HT)  # 16 CPUs; node 0 = 0-3,8-11


def three() -> CpusetEngine:
    """A shared, an integer (2 CPUs) and a pinned (CPU 5) container."""
    engine = CpusetEngine(TOPOLOGY)
    web, db, io = pod("web", qos="burstable"), pod("db"), pod("io", qos="burstable", pins="5")
    for facts, of in ((container("c-web", web), web), (container("c-db", db, cpu_limit=2), db),
                      (container("c-io", io), io)):
        engine.commit(engine.plan_create(of, facts))
    return engine


def right(engine: CpusetEngine) -> dict[str, Observed]:
    """What the kernel enforces when every update was applied."""
    seen = {}
    for cid in engine.ledger.entries:
        placement = engine.placement(cid)
        assert placement is not None
        seen[cid] = Observed(cpus=placement.cpus, mems=placement.mems or CPUSet([0, 1]))
    return seen


def test_a_kernel_that_enforces_every_placement_shows_no_mismatch() -> None:
    engine = three()
    assert mismatches(engine.ledger, engine.shared_pool(), right(engine)) == []


def test_a_shared_container_still_on_a_pinned_cpu_is_a_cpus_mismatch() -> None:
    engine = three()
    seen = right(engine) | {"c-web": Observed(cpus=TOPOLOGY.online, mems=CPUSet([0, 1]))}
    [found] = mismatches(engine.ledger, engine.shared_pool(), seen)
    assert (found.container_id, found.cause, found.observed_cpus) == ("c-web", "cpus",
                                                                      TOPOLOGY.online)
    assert found.expected_cpus == engine.shared_pool()
    assert found.describe().startswith(f"cpus {engine.shared_pool()} expected, 0-15 enforced")


def test_a_pin_with_the_wrong_memory_nodes_is_a_mems_mismatch_and_others_mems_are_free() -> None:
    engine = three()
    seen = right(engine) | {"c-io": Observed(cpus=CPUSet([5]), mems=CPUSet([0, 1])),
                            "c-db": Observed(cpus=engine.ledger.entries["c-db"].cpus,
                                             mems=CPUSet([1]))}
    assert [(m.container_id, m.cause) for m in
            mismatches(engine.ledger, engine.shared_pool(), seen)] == [("c-io", "mems")]


def test_an_unreadable_cgroup_is_reported_with_why_and_unknown_containers_are_not_judged() -> None:
    engine = three()
    seen = right(engine) | {"c-db": Observed(cpus=None, problem="no cgroup at /x"),
                            "c-gone": Observed(cpus=CPUSet([0]))}
    assert mismatches(engine.ledger, engine.shared_pool(), seen) == [Mismatch(
        container_id="c-db", subject="ns/db/main", cause="unreadable",
        expected_cpus=engine.ledger.entries["c-db"].cpus, observed_cpus=None,
        problem="no cgroup at /x")]
    del seen["c-web"]  # not read this time: not judged
    assert [m.container_id for m in
            mismatches(engine.ledger, engine.shared_pool(), seen)] == ["c-db"]


def test_a_quota_back_in_an_unthrottled_containers_kernel_is_a_quota_mismatch() -> None:
    engine = three()
    seen = right(engine)
    seen["c-db"] = Observed(cpus=seen["c-db"].cpus, mems=seen["c-db"].mems, cfs_quota=200_000)
    seen["c-web"] = Observed(cpus=seen["c-web"].cpus, mems=seen["c-web"].mems, cfs_quota=50_000)
    [found] = mismatches(engine.ledger, engine.shared_pool(), seen,
                         unthrottled={"c-db", "c-web-gone"})
    assert (found.container_id, found.cause, found.observed_quota) == ("c-db", "quota", 200_000)
    assert found.describe() == "no cfs quota expected, 200000 enforced"
    # Without the set (the kubelet's quota configured) a quota is nobody's business here.
    assert mismatches(engine.ledger, engine.shared_pool(), seen) == []


def test_an_unthrottled_container_whose_quota_was_not_read_or_is_lifted_is_right() -> None:
    engine = three()
    seen = right(engine)
    assert mismatches(engine.ledger, engine.shared_pool(), seen, unthrottled={"c-db"}) == []
    seen["c-db"] = Observed(cpus=seen["c-db"].cpus, mems=seen["c-db"].mems, cfs_quota=-1)
    assert mismatches(engine.ledger, engine.shared_pool(), seen, unthrottled={"c-db"}) == []


def test_a_wrong_cpuset_is_reported_before_a_quota() -> None:
    engine = three()
    seen = right(engine) | {"c-db": Observed(cpus=CPUSet([7]), mems=CPUSet([0, 1]),
                                             cfs_quota=200_000)}
    [found] = mismatches(engine.ledger, engine.shared_pool(), seen, unthrottled={"c-db"})
    assert found.cause == "cpus"
