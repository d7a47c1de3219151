"""Exclusive containers run without CFS quota (decision 44): lifted in the creation's
adjustment and in a resize's own update, left to the kubelet for shared and pinned ones and
after a resize makes them shared, kept integer by a rebuild that sees no quota, and left alone
when ``[cpus] exclusive_cpu_quota = "kubelet"``."""

from __future__ import annotations

from collections.abc import Sequence

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import CPUSet, Kind
from cpuset_core.quota import ExclusiveQuota
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import cpus_of, make, resources


def quota_of(message: pb.ContainerAdjustment | pb.ContainerUpdate | None) -> int | None:
    """The quota a message sets, ``None`` when its wrapper is absent (the kubelet's stays)."""
    assert message is not None
    cpu = message.linux.resources.cpu
    return cpu.quota.value if cpu.HasField("quota") else None


def own(updates: Sequence[pb.ContainerUpdate], container_id: str) -> pb.ContainerUpdate:
    assert updates[-1].container_id == container_id  # the container's own update goes last
    return updates[-1]


def lifted(ctr: pb.Container) -> pb.Container:
    """``ctr`` as the runtime reports it after the lift: quota -1, the kubelet's shares."""
    reported = pb.Container()
    reported.CopyFrom(ctr)
    reported.linux.resources.cpu.quota.value = -1
    return reported


def test_an_integer_container_is_created_without_quota_and_others_keep_the_kubelets() -> None:
    handler, _, _ = make()
    db, web, io = pod("db"), pod("web", qos="burstable"), pod("io", qos="burstable", pins="3")
    adjustment, _ = handler.on_create_container(db, container("pg", db, cpus=2))
    assert quota_of(adjustment) == -1
    adjustment, _ = handler.on_create_container(web, container("app", web))
    assert quota_of(adjustment) is None
    adjustment, _ = handler.on_create_container(io, container("io", io))
    assert quota_of(adjustment) is None


def test_with_the_kubelets_quota_configured_nothing_is_lifted() -> None:
    handler, service, _ = make()
    service.exclusive_quota = ExclusiveQuota.KUBELET
    db = pod("db")
    pg = container("pg", db, cpus=2)
    adjustment, _ = handler.on_create_container(db, pg)
    assert quota_of(adjustment) is None
    assert quota_of(own(handler.on_update_container(db, pg, resources(4)), pg.id)) is None


def test_a_resize_keeps_an_exclusive_container_unthrottled() -> None:
    handler, _, _ = make()
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    # The kubelet's request carries its quota (400000); the answer replaces it.
    assert quota_of(own(handler.on_update_container(db, lifted(pg), resources(4)), pg.id)) == -1
    # A request without limits (zeros: the runtime keeps what it has) is still answered.
    assert quota_of(own(handler.on_update_container(db, lifted(pg), resources(0)), pg.id)) == -1


def test_a_resize_to_a_fraction_leaves_the_kubelets_new_quota_in_place() -> None:
    handler, service, _ = make()
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    updates = handler.on_update_container(db, lifted(pg), resources(1.5))
    # No quota in the answer: the runtime applies the request's 150000 (non-zero, §6.2).
    assert quota_of(own(updates, pg.id)) is None
    assert service.ledger.entries[pg.id].kind is Kind.SHARED


def test_a_resize_from_a_fraction_to_whole_cpus_lifts_the_quota() -> None:
    handler, service, _ = make()
    db = pod("db")
    sidecar = container("sidecar", db)
    sidecar.linux.resources.cpu.quota.value = 150_000
    sidecar.linux.resources.cpu.period.value = 100_000
    sidecar.linux.resources.cpu.shares.value = 1536
    adjustment, _ = handler.on_create_container(db, sidecar)
    assert quota_of(adjustment) is None
    updates = handler.on_update_container(db, sidecar, resources(2))
    assert quota_of(own(updates, sidecar.id)) == -1
    assert service.ledger.entries[sidecar.id].kind is Kind.INTEGER


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
    handler.on_update_container(db, lifted(pg), resources(1.5))
    handler.on_update_container(db, pg, resources(2))
    history = service.history()
    assert history[pg.id][0].startswith("created: integer cpus=0,8 mems=default "
                                        "cfs_quota=unlimited (")
    assert "cfs_quota" not in history[pg.id][1]  # resized to 1500m: the kubelet's quota
    assert history[pg.id][2].startswith("resized: integer cpus=")
    assert "cfs_quota=unlimited" in history[pg.id][2]
    assert "cfs_quota" not in history[app.id][0]
