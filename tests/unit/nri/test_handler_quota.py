"""Exclusive containers run without CFS quota in the kernel while the runtime's record keeps
the kubelet's (decision 44, issue 44 / decision 54): no answer carries a quota; the quota is
lifted in the container's cgroup when it starts and after the kubelet's update
(PostUpdateContainer), for exclusive containers only, not after a resize makes them shared,
never with ``[cpus] exclusive_cpu_quota = "kubelet"``; a rebuild that sees no quota (records
of older versions) keeps them integer."""

from __future__ import annotations

from collections.abc import Sequence

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import CPUSet, Kind
from cpuset_core.quota import ExclusiveQuota
from cpuset_service.placement import PlacementService
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import cpus_of, make, resources


class Writes:
    """A quota writer that records the cgroups it lifted (``fail``: says why not instead)."""

    def __init__(self, fail: str = "") -> None:
        self.lifted: list[str] = []
        self.fail = fail

    def lift(self, cgroups_path: str) -> str:
        self.lifted.append(cgroups_path)
        return self.fail


def writes(service: PlacementService, fail: str = "") -> Writes:
    service.quota.writer = writer = Writes(fail)
    return writer


def quota_of(message: pb.ContainerAdjustment | pb.ContainerUpdate | None) -> int | None:
    """The quota a message sets, ``None`` when its wrapper is absent (the kubelet's stays)."""
    assert message is not None
    cpu = message.linux.resources.cpu
    return cpu.quota.value if cpu.HasField("quota") else None


def own(updates: Sequence[pb.ContainerUpdate], container_id: str) -> pb.ContainerUpdate:
    assert updates[-1].container_id == container_id  # the container's own update goes last
    return updates[-1]


def lifted(ctr: pb.Container) -> pb.Container:
    """``ctr`` as an earlier version's record reports it after its lift: quota -1."""
    reported = pb.Container()
    reported.CopyFrom(ctr)
    reported.linux.resources.cpu.quota.value = -1
    return reported


def with_cgroup(ctr: pb.Container) -> pb.Container:
    ctr.linux.cgroups_path = f"/kubepods/pod-{ctr.pod_sandbox_id}/{ctr.id}"
    return ctr


def test_no_answer_carries_a_quota_so_the_record_keeps_the_kubelets() -> None:
    handler, _, _ = make()
    db, web, io = pod("db"), pod("web", qos="burstable"), pod("io", qos="burstable", pins="3")
    pg = container("pg", db, cpus=2)
    adjustment, _ = handler.on_create_container(db, pg)
    assert quota_of(adjustment) is None
    adjustment, _ = handler.on_create_container(web, container("app", web))
    assert quota_of(adjustment) is None
    adjustment, _ = handler.on_create_container(io, container("io", io))
    assert quota_of(adjustment) is None
    assert quota_of(own(handler.on_update_container(db, pg, resources(4)), pg.id)) is None


def test_an_exclusive_container_is_lifted_in_the_kernel_at_its_start_and_after_each_update(
        ) -> None:
    handler, service, _ = make()
    writer = writes(service)
    db, web = pod("db"), pod("web", qos="burstable")
    pg, app = with_cgroup(container("pg", db, cpus=2)), with_cgroup(container("app", web))
    handler.on_create_container(db, pg)
    handler.on_create_container(web, app)
    assert writer.lifted == []  # no cgroup before the start
    handler.on_start_container(db, pg)
    handler.on_start_container(web, app)
    assert writer.lifted == [pg.linux.cgroups_path]  # the shared one keeps the kubelet's
    handler.on_update_container(db, pg, resources(4))
    handler.on_post_update_container(db, pg)
    assert writer.lifted == [pg.linux.cgroups_path] * 2
    assert service.quota.unthrottled() == {pg.id}


def test_a_resize_to_a_fraction_leaves_the_kubelets_new_quota_in_the_kernel() -> None:
    handler, service, _ = make()
    writer = writes(service)
    db = pod("db")
    pg = with_cgroup(container("pg", db, cpus=2))
    handler.on_create_container(db, pg)
    handler.on_start_container(db, pg)
    updates = handler.on_update_container(db, pg, resources(1.5))
    handler.on_post_update_container(db, pg)
    # No quota in the answer: the runtime applies the request's 150000 (non-zero, §6.2).
    assert quota_of(own(updates, pg.id)) is None
    assert service.ledger.entries[pg.id].kind is Kind.SHARED
    assert writer.lifted == [pg.linux.cgroups_path]  # at its start only
    assert service.quota.unthrottled() == frozenset()


def test_a_resize_from_a_fraction_to_whole_cpus_lifts_the_quota() -> None:
    handler, service, _ = make()
    writer = writes(service)
    db = pod("db")
    sidecar = with_cgroup(container("sidecar", db))
    sidecar.linux.resources.cpu.quota.value = 150_000
    sidecar.linux.resources.cpu.period.value = 100_000
    sidecar.linux.resources.cpu.shares.value = 1536
    handler.on_create_container(db, sidecar)
    handler.on_start_container(db, sidecar)
    assert writer.lifted == []
    updates = handler.on_update_container(db, sidecar, resources(2))
    handler.on_post_update_container(db, sidecar)
    assert quota_of(own(updates, sidecar.id)) is None
    assert service.ledger.entries[sidecar.id].kind is Kind.INTEGER
    assert writer.lifted == [sidecar.linux.cgroups_path]


def test_with_the_kubelets_quota_configured_nothing_is_lifted() -> None:
    handler, service, _ = make()
    writer = writes(service)
    service.exclusive_quota = ExclusiveQuota.KUBELET
    db = pod("db")
    pg = with_cgroup(container("pg", db, cpus=2))
    adjustment, _ = handler.on_create_container(db, pg)
    handler.on_start_container(db, pg)
    assert quota_of(adjustment) is None
    assert quota_of(own(handler.on_update_container(db, pg, resources(4)), pg.id)) is None
    handler.on_post_update_container(db, pg)
    assert writer.lifted == []


def test_a_lift_the_kernel_refuses_is_answered_ok_and_left_to_the_verifier() -> None:
    handler, service, _ = make()
    writer = writes(service, fail="no cgroup")
    db = pod("db")
    pg = with_cgroup(container("pg", db, cpus=1))
    handler.on_create_container(db, pg)
    handler.on_start_container(db, pg)  # does not raise: the start goes on
    assert writer.lifted == [pg.linux.cgroups_path]
    assert service.quota.unthrottled() == {pg.id}


def test_without_a_cgroup_path_or_a_writer_nothing_is_written() -> None:
    handler, service, _ = make()
    db = pod("db")
    pg = container("pg", db, cpus=1)
    handler.on_create_container(db, pg)
    assert not service.quota.lift(pg.id)  # no writer
    writer = writes(service)
    assert not service.quota.lift(pg.id)  # no path
    assert writer.lifted == []


def test_a_synchronize_adopts_the_exclusive_containers_and_a_removal_forgets_them() -> None:
    handler, service, _ = make()
    db, web = pod("db"), pod("web", qos="burstable")
    pg = container("pg", db, cpus=2, cpuset="0,8")
    app = container("app", web, cpuset="1-7,9-15")
    handler.on_synchronize([db, web], [pg, app])
    assert service.quota.unthrottled() == {pg.id}
    handler.on_remove_container(db, pg)
    assert service.quota.unthrottled() == frozenset()
    service.exclusive_quota = ExclusiveQuota.KUBELET
    handler.on_synchronize([db, web], [pg, app])
    assert service.quota.unthrottled() == frozenset()


def test_a_rebuild_after_a_restart_keeps_a_lifted_container_integer_on_its_cpus() -> None:
    # A new plugin sees the container as the runtime reports it since the lift: no quota.
    handler, service, _ = make()
    db, web = pod("db"), pod("web", qos="burstable")
    pg = lifted(container("pg", db, cpus=2, cpuset="0,8"))
    app = container("app", web, cpuset="1-7,9-15")
    updates = handler.on_synchronize([db, web], [pg, app])
    entry = service.ledger.entries[pg.id]
    assert (entry.kind, entry.cpus) == (Kind.INTEGER, CPUSet.parse("0,8"))
    assert cpus_of(updates) == {}  # nothing to correct: the pool does not take its CPUs


def test_explain_says_when_a_containers_quota_was_lifted() -> None:
    handler, service, _ = make()
    db, web = pod("db"), pod("web", qos="burstable")
    pg, app = container("pg", db, cpus=2), container("app", web)
    handler.on_create_container(db, pg)
    handler.on_create_container(web, app)
    handler.on_update_container(db, pg, resources(1.5))
    handler.on_update_container(db, pg, resources(2))
    history = service.history()
    assert history[pg.id][0].startswith("created: integer cpus=0,8 mems=default "
                                        "cfs_quota=unlimited (")
    assert "cfs_quota" not in history[pg.id][1]  # resized to 1500m: the kubelet's quota
    assert history[pg.id][2].startswith("resized: integer cpus=")
    assert "cfs_quota=unlimited" in history[pg.id][2]
    assert "cfs_quota" not in history[app.id][0]
