"""The NRI handler's lifecycle edges: init containers, pods that go away, drift counting."""

from __future__ import annotations

import asyncio
import logging

import pytest

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap, state_view
from cpuset_core import CPUSet
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import make


def test_an_app_container_reuses_its_completed_init_containers_cpus() -> None:
    handler, service, _ = make()
    blocker = pod("blocker")
    handler.on_create_container(blocker, container("b", blocker, cpus=2))
    web = pod("web")
    adjust, _ = handler.on_create_container(web, container("init", web, cpus=2))
    assert adjust is not None
    init_cpus = adjust.linux.resources.cpu.cpus
    handler.on_stop_container(web, container("init", web, cpus=2))  # it exited
    handler.on_stop_container(blocker, container("b", blocker, cpus=2))
    adjust, _ = handler.on_create_container(web, container("app", web, cpus=2))
    assert adjust is not None
    assert adjust.linux.resources.cpu.cpus == init_cpus
    assert "reuses CPUs" in service.history()["id-app-0123456789"][0]


def test_stopping_a_pod_releases_a_container_that_never_started() -> None:
    handler, service, pusher = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    handler.on_create_container(db, container("pg", db, cpus=2))  # created, never started
    handler.on_pod_sandbox_gone(db, removed=False)
    assert set(service.ledger.entries) == {"id-app-0123456789"}
    assert pusher.pending() == {"id-app-0123456789"}  # the pool grew: sent from the background
    assert "id-pg-0123456789" not in service.history()
    handler.on_pod_sandbox_gone(db, removed=True)  # nothing left: a no-op
    assert set(service.ledger.entries) == {"id-app-0123456789"}
    assert service.engine.left_behind(db.id) == CPUSet()


def test_a_synchronize_counts_repaired_and_unrepaired_drift_and_logs_the_unrepaired(
        caplog: pytest.LogCaptureFixture) -> None:
    handler, service, _ = make()
    io, web = pod("io", pins="3"), pod("web", qos="burstable")
    ghost = pb.PodSandbox(id="sb-ghost")
    io_c = container("io", io, cpuset="3")
    io_c.linux.resources.cpu.mems = "0"
    orphan = container("orphan", ghost, cpuset="0-15")
    with caplog.at_level(logging.INFO, logger="nri_cpuset.placement"):
        handler.on_synchronize([io, web], [io_c, container("app", web, cpuset="0-15"), orphan])
    assert service.statistics.drift_counts() == (1, 1)
    warnings = [r.__dict__ for r in caplog.records if r.levelno == logging.WARNING
                and r.getMessage() == "drift unrepaired"]
    assert [(w["container"], w["id"], w["reported"], w["expected"], w["source"], w["reason"])
            for w in warnings] == [("?/?/orphan", "id-orphan-01", "0-15", "0-2,4-15",
                                    "synchronize", "its pod is unknown")]
    handler.on_synchronize([io, web], [io_c, container("app", web, cpuset="0-2,4-15")])
    assert service.statistics.drift_counts() == (1, 1)  # nothing new


def test_the_daemon_reports_drift_counts_in_its_stats_and_inspect_document() -> None:
    daemon = bootstrap.build_daemon(StaticTopologySource(build_topology(DUAL_SOCKET_HT)),
                                    environ={}, name="nri-cpuset", index="99",
                                    socket_path="/nonexistent")
    web = pod("web", qos="burstable")
    daemon.handler.on_synchronize([web], [container("app", web, cpuset="3")])
    stats = state_view.decode(asyncio.run(daemon.introspection.snapshot())).stats
    assert (stats["drift_repaired"], stats["drift_unrepaired"]) == (1, 0)


def test_a_cri_inventory_whose_corrections_fail_counts_them_as_unrepaired(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cpuset_cli.daemon import inventory as inventory_module
    from cpuset_core import ContainerFacts, PodFacts

    daemon = bootstrap.build_daemon(StaticTopologySource(build_topology(DUAL_SOCKET_HT)),
                                    environ={"NRI_PLUGIN_SOCKET": "3"}, name="nri-cpuset",
                                    index="99", socket_path="/nonexistent")
    io = PodFacts(sandbox_id="sb-io", namespace="ns", name="io",
                  annotations={"weka.io/cores-ids": "3"})
    web = PodFacts(sandbox_id="sb-web", namespace="ns", name="web",
                   cgroup_parent="/kubepods/burstable/podweb")
    containers = [ContainerFacts(id="c-io", sandbox_id="sb-io", name="io", cpus="3", mems="0"),
                  ContainerFacts(id="c-web", sandbox_id="sb-web", name="app", cpus="0-15")]
    monkeypatch.setattr(inventory_module, "_read_inventory",
                        lambda _socket: ([io, web], containers))

    async def refuse(updates: object) -> None:
        raise RuntimeError("runtime said no")

    inventory = inventory_module.CriInventory(daemon.service, refuse, "/nonexistent")
    asyncio.run(inventory.take())  # the background task's body
    assert daemon.service.statistics.drift_counts() == (0, 1)
