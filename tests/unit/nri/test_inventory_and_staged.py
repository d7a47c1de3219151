"""The CRI inventory for pre-installed plugins on runtimes that never synchronize them, and
the all-or-nothing UpdateContainers driver it applies corrections with."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.inventory import read_inventory
from cpuset_adapters.cri.results import (
    ContainerInfo,
    ContainerStatus,
    PodInfo,
    PodStatus,
    Resources,
)
from cpuset_adapters.grpc_status import StatusCode
from cpuset_adapters.nri.handler_port import RuntimeInfo
from cpuset_adapters.nri.launch import InheritedSocket
from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap
from cpuset_core import ContainerUpdate, CPUSet, Kind, UpdateTransactionError
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from cpuset_service.staged import apply_staged


def update(cid: str, before: str, after: str, kind: Kind = Kind.SHARED) -> ContainerUpdate:
    return ContainerUpdate(container_id=cid, subject=f"ns/{cid}/main", kind=kind,
                           cpus=CPUSet.parse(after), previous_cpus=CPUSet.parse(before))


@dataclass
class Runtime:
    """Records UpdateContainers calls; fails the ``fail_on``-th call (1-based)."""

    fail_on: set[int] = field(default_factory=set)
    calls: list[list[tuple[str, str]]] = field(default_factory=list)

    async def send(self, batch: Sequence[ContainerUpdate]) -> None:
        self.calls.append([(u.container_id, u.cpus.format()) for u in batch])
        if len(self.calls) in self.fail_on:
            raise RuntimeError("NRI update of some containers failed")


def test_staged_updates_go_shrink_then_move_then_grow() -> None:
    runtime = Runtime()
    asyncio.run(apply_staged(runtime.send, [
        update("grow", "2-3", "0-3"), update("int", "0-1", "4-5", Kind.INTEGER),
        update("shrink", "0-7", "6-7")], "test"))
    assert runtime.calls == [[("shrink", "6-7")], [("int", "4-5")], [("grow", "0-3")]]


def test_a_failed_step_restores_every_step_tried_newest_first() -> None:
    runtime = Runtime(fail_on={2})
    with pytest.raises(UpdateTransactionError) as caught:
        asyncio.run(apply_staged(runtime.send, [
            update("int", "0-1", "4-5", Kind.INTEGER), update("shrink", "0-7", "6-7")],
            "ns/io/main"))
    assert caught.value.restored
    assert caught.value.failed == ("int",)
    assert runtime.calls == [[("shrink", "6-7")], [("int", "4-5")],
                             [("int", "0-1")], [("shrink", "0-7")]]


def test_a_failed_restore_is_reported() -> None:
    runtime = Runtime(fail_on={1, 2})
    with pytest.raises(UpdateTransactionError, match="NOT all restored") as caught:
        asyncio.run(apply_staged(runtime.send, [update("shrink", "0-7", "6-7")], "x"))
    assert not caught.value.restored


class FakeCri:
    """Answers like containerd's CRI (unset values as 0 / "")."""

    def list_pods(self) -> list[PodInfo]:
        return [PodInfo(id="p1", name="io", namespace="ns", uid="u1", ready=True,
                        annotations={"weka.io/cores-ids": "3"}, labels={}),
                PodInfo(id="p2", name="gone", namespace="ns", uid="u2", ready=False,
                        annotations={}, labels={})]

    def pod_status(self, pod_id: str) -> PodStatus:
        if pod_id == "p2":
            return PodStatus(id="p2", name="gone", namespace="ns", uid="u2", ready=False,
                             annotations={}, info={})
        return PodStatus(id="p1", name="io", namespace="ns", uid="u1", ready=True,
                         annotations={"weka.io/cores-ids": "3"},
                         info={"info": {"config": {"linux": {
                             "cgroup_parent": "/kubepods/burstable/podu1"}}}})

    def list_containers(self) -> list[ContainerInfo]:
        return [ContainerInfo(id="c1", pod_id="p1", name="io", state="CONTAINER_RUNNING",
                              annotations={}, labels={}),
                ContainerInfo(id="c2", pod_id="p1", name="old", state="CONTAINER_EXITED",
                              annotations={}, labels={}),
                ContainerInfo(id="c3", pod_id="p1", name="vanishing",
                              state="CONTAINER_RUNNING", annotations={}, labels={})]

    def container_status(self, container_id: str) -> ContainerStatus:
        if container_id == "c3":  # removed between the listing and this call
            raise CriError("ContainerStatus", StatusCode.NOT_FOUND, "not found")
        assert container_id == "c1"
        return ContainerStatus(id="c1", name="io", state="CONTAINER_RUNNING", exit_code=0,
                               reason="", message="", annotations={}, pid=42, info={},
                               resources=Resources(cpu_period=100_000, cpu_quota=0,
                                                   cpu_shares=102, cpuset_cpus="3"))


def test_inventory_reads_pods_and_live_containers_like_a_synchronize() -> None:
    """Every pod (NRI's Synchronize also sends pods that are not ready), the created or running
    containers, and nothing for a container removed mid-read."""
    pods, containers = read_inventory(FakeCri())  # type: ignore[arg-type]
    assert [(p.sandbox_id, p.cgroup_parent, dict(p.annotations)) for p in pods] == [
        ("p1", "/kubepods/burstable/podu1", {"weka.io/cores-ids": "3"}), ("p2", "", {})]
    (only,) = containers
    assert (only.id, only.cpu_quota, only.cpu_period, only.cpu_shares, only.cpus) == (
        "c1", None, 100_000, 102, "3")


@pytest.mark.parametrize(("endpoint", "registration_ms", "expected"), [
    (InheritedSocket(3), 0, True),        # pre-installed on NRI < v0.7: never synchronized
    (InheritedSocket(3), 5000, False),    # pre-installed on v0.7+: synchronized by the runtime
])
def test_preinstalled_plugin_takes_an_inventory_only_when_the_runtime_will_not_sync(
        endpoint: InheritedSocket, registration_ms: int, expected: bool) -> None:
    daemon = bootstrap.build_daemon(
        StaticTopologySource(build_topology(DUAL_SOCKET_HT)),
        environ={"NRI_PLUGIN_SOCKET": str(endpoint.fd)}, name="nri-cpuset", index="99",
        socket_path="/nonexistent", cri_socket="/nonexistent/cri.sock")

    async def configure() -> bool:
        daemon.handler.on_configure(RuntimeInfo(registration_timeout_ms=registration_ms))
        scheduled = daemon.inventory is not None
        if daemon.inventory is not None:
            daemon.inventory.cancel()
        return scheduled

    assert asyncio.run(configure()) is expected


def test_external_plugin_never_takes_an_inventory() -> None:
    daemon = bootstrap.build_daemon(StaticTopologySource(build_topology(DUAL_SOCKET_HT)),
                                    environ={}, name="nri-cpuset", index="99",
                                    socket_path="/nonexistent")

    async def configure() -> None:
        daemon.handler.on_configure(RuntimeInfo(registration_timeout_ms=0))

    asyncio.run(configure())
    assert daemon.inventory is None


def test_an_inventory_that_misses_a_just_decided_container_does_not_free_its_cpus(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """containerd calls NRI CreateContainer before the container enters its CRI store, so an
    inventory read right after can miss it (review finding #3)."""
    from cpuset_cli.daemon import inventory as inventory_module
    from cpuset_core import ContainerFacts as Facts
    from cpuset_core import CpusetEngine, PodFacts
    from cpuset_service.placement import PlacementService

    service = PlacementService(CpusetEngine(build_topology(DUAL_SOCKET_HT)))
    db = PodFacts(sandbox_id="s-db", namespace="ns", name="db", cgroup_parent="/kubepods/poddb")
    service.admit(db, Facts(id="c-db", sandbox_id="s-db", name="pg", cpu_quota=200_000,
                            cpu_period=100_000))
    io = PodFacts(sandbox_id="s-io", namespace="ns", name="io",
                  annotations={"weka.io/cores-ids": "5"})
    service.admit(io, Facts(id="c-io", sandbox_id="s-io", name="io"))
    held = service.ledger.entries["c-db"].cpus
    # The snapshot lists neither yet.
    monkeypatch.setattr(inventory_module, "_read_inventory", lambda _socket: ([], []))
    sent: list[object] = []

    async def send(updates: object) -> None:
        sent.append(updates)

    asyncio.run(inventory_module.CriInventory(service, send, "/nonexistent").take())
    assert service.synchronized
    assert service.ledger.entries["c-db"].cpus == held
    assert service.ledger.pinned == CPUSet.parse("5")
    later = PodFacts(sandbox_id="s-z", namespace="ns", name="z", cgroup_parent="/kubepods/podz")
    z = service.admit(later, Facts(id="c-z", sandbox_id="s-z", name="z", cpu_quota=200_000,
                                   cpu_period=100_000))
    assert z.placement.cpus.isdisjoint(held)


def test_the_inventorys_corrections_make_no_call_of_the_plugins_own() -> None:
    """The inventory runs on containerd 1.7 only, whose NRI a call of the plugin's own can
    deadlock for good (decision 51): what the kernel does not take rides on the next answers."""
    from tests.builders.nri import container, pod

    daemon = bootstrap.build_daemon(
        StaticTopologySource(build_topology(DUAL_SOCKET_HT)), environ={"NRI_PLUGIN_SOCKET": "3"},
        name="nri-cpuset", index="99", cri_socket="/nonexistent/cri.sock",
        kernel_updates=False)
    runtime = Runtime()
    daemon.session.apply_updates = runtime.send  # type: ignore[method-assign]
    web = pod("web", qos="burstable")
    daemon.handler.on_create_container(web, container("app", web))
    app = "id-app-0123456789"
    daemon.service.pusher.forget(app)  # the runtime's record is not known to be right
    pool = daemon.service.engine.shared_pool().format()
    asyncio.run(daemon._apply_corrections([update(app, "0", pool)]))
    assert runtime.calls == []
    assert app in daemon.service.pusher.pending()
    late = pod("late", qos="burstable")
    _, updates = daemon.handler.on_create_container(late, container("late", late))
    assert app in {u.container_id for u in updates}
