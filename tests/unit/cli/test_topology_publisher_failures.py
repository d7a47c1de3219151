"""The API server's failures never reach a placement: with a fake API server on 127.0.0.1 that
refuses connections, answers 403, 404 (no CRD), 409 or hangs, the publisher runs beside the
placement service as in the daemon, and every container is placed exactly as without a
publisher, while a write is still in flight. And how ``[topology_publisher]`` becomes a
publisher (or, logged, none)."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from cpuset_adapters.config import TopologyPublisher as Section
from cpuset_adapters.kubernetes.api_client import TopologyApi
from cpuset_adapters.kubernetes.credentials import Endpoint
from cpuset_adapters.kubernetes.topology_object import build_topology_object
from cpuset_adapters.observability.metrics import PluginMetrics
from cpuset_cli.daemon.topology_publisher import TopologyPublisher, publisher_for
from cpuset_core import CpusetEngine, Placement
from cpuset_lab.machines import DUAL_SOCKET_HT, LAB_NODE_KIB, write_sysfs_tree
from cpuset_service.placement import PlacementService
from tests.builders.facts import container, pod
from tests.support.kube_api import serve, write_kubeconfig
from tests.support.metrics_text import value
from tests.unit.core.topologies import DUAL_SOCKET

HANG_GUARD = 30.0
"""Seconds a wait lasts before the test calls the publisher stuck."""

Workload = list[tuple[str, str, float | None, str | None]]
WORKLOAD: Workload = [  # name, qos, CPUs, pins
    ("web", "burstable", None, None), ("db", "guaranteed", 2, None),
    ("io", "burstable", None, "3"), ("cache", "guaranteed", 3, None),
    ("api", "burstable", 0.5, None), ("batch", "guaranteed", 1, None),
]


def place(service: PlacementService, workload: Workload) -> None:
    for name, qos, cpus, pins in workload:
        p = pod(name, qos=qos, pins=pins)
        service.admit(p, container(name, p, cpu_limit=cpus))


def placements(service: PlacementService) -> dict[str, Placement | None]:
    return {cid: service.placement(cid) for cid in sorted(service.ledger.entries)}


def baseline() -> dict[str, Placement | None]:
    service = PlacementService(CpusetEngine(DUAL_SOCKET))
    service.synchronize([], [], source="synchronize")
    place(service, WORKLOAD)
    return placements(service)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def run_beside(publisher: TopologyPublisher, service: PlacementService,
                     metrics: PluginMetrics, reason: str) -> None:
    """The daemon's shape: the publisher's task runs while decisions are made on the loop,
    until it has failed with ``reason`` and retried."""
    task = asyncio.create_task(publisher.run())
    for step in WORKLOAD:
        place(service, [step])
        await asyncio.sleep(0.05)
    await _until(lambda: failures(metrics, reason) >= 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def rig(port: int, timeout: float = 0.5) -> tuple[PlacementService, TopologyPublisher,
                                                 PluginMetrics]:
    service = PlacementService(CpusetEngine(DUAL_SOCKET))
    service.synchronize([], [], source="synchronize")
    metrics = PluginMetrics()
    endpoint = Endpoint(host="127.0.0.1", port=port, context=None, token=lambda: "t",
                        source="test")
    publisher = TopologyPublisher(service, TopologyApi(endpoint, timeout=timeout),
                                  node_name="worker-1", read_memory=lambda: {0: 1, 1: 1},
                                  policy=lambda: "single-numa-node", observer=metrics)
    return service, publisher, metrics


def failures(metrics: PluginMetrics, reason: str) -> float:
    return value(metrics, "nri_cpuset_topology_publishes_total", result=reason) or 0.0


@pytest.mark.parametrize("mode", ["forbidden", "crd-missing", "conflict"])
def test_a_refusing_api_server_leaves_every_placement_as_without_a_publisher(
        mode: str, caplog: pytest.LogCaptureFixture) -> None:
    with serve(mode) as api:
        service, publisher, metrics = rig(api.port)
        asyncio.run(run_beside(publisher, service, metrics, mode))  # tried, then retried
    assert placements(service) == baseline()
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
    assert publisher.published is None


def test_an_unreachable_api_server_leaves_every_placement_as_without_a_publisher() -> None:
    service, publisher, metrics = rig(closed_port())
    asyncio.run(run_beside(publisher, service, metrics, "unreachable"))
    assert placements(service) == baseline()


def test_decisions_are_made_while_a_write_hangs_and_the_timeout_ends_it() -> None:
    with serve("slow") as api:
        service, publisher, metrics = rig(api.port, timeout=3.0)

        async def scenario() -> None:
            task = asyncio.create_task(publisher.run())
            while not api.requests:  # the first write is in the server's hands, unanswered
                await asyncio.sleep(0.02)
            place(service, WORKLOAD)  # decided on the loop meanwhile
            assert placements(service) == baseline()
            assert publisher.published is None
            assert not api.release.is_set()
            while failures(metrics, "timeout") == 0:
                await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())


def test_a_recovered_api_server_gets_the_latest_state() -> None:
    with serve("forbidden") as api:
        service, publisher, _ = rig(api.port)

        async def scenario() -> None:
            task = asyncio.create_task(publisher.run())
            place(service, WORKLOAD)
            await asyncio.sleep(0.5)
            api.mode = "ok"  # RBAC fixed: the next retry (1 s back-off) creates the object
            await _until(lambda: "worker-1" in api.objects)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())
        zones = api.objects["worker-1"]["zones"]
    engine = service.engine
    assert zones == build_topology_object(
        node_name="worker-1", topology=engine.topology, ledger=engine.ledger,
        settings=engine.settings, draining=engine.draining, memory={0: 1, 1: 1},
        policy="single-numa-node")["zones"]
    # 7 CPUs pinned or exclusive leave 9 free, one of which the shared containers keep: each
    # node alone can give all its free CPUs (8 spare at most), so the nodes add up to 9.
    assert sum(z["resources"][0]["available"] for z in zones) == 9


async def _until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition`` holds, bounded by a hang guard (never a verdict on speed:
    the publisher's back-off is wall-clock time, which a loaded machine stretches)."""
    async with asyncio.timeout(HANG_GUARD):
        while not condition():
            await asyncio.sleep(0.05)


# -- from the configuration section to a publisher ---------------------------------------------


def test_an_off_section_makes_no_publisher() -> None:
    assert publisher_for(Section(), _service(), PluginMetrics(), environ={},
                         sysfs_root="/sys") is None


def test_without_a_node_name_no_publisher_starts_and_the_log_says_why(
        caplog: pytest.LogCaptureFixture) -> None:
    assert publisher_for(Section(enabled=True), _service(), PluginMetrics(), environ={},
                         sysfs_root="/sys") is None
    assert "no node name (set NODE_NAME" in caplog.text


def test_without_credentials_no_publisher_starts_and_the_log_says_why(
        caplog: pytest.LogCaptureFixture) -> None:
    assert publisher_for(Section(enabled=True), _service(), PluginMetrics(),
                         environ={"NODE_NAME": "worker-1"}, sysfs_root="/sys") is None
    assert "not in a cluster" in caplog.text


def test_a_kubeconfig_and_the_downward_apis_node_name_make_a_publisher_that_publishes(
        tmp_path: Path) -> None:
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path / "sys")
    with serve() as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api)
        service = _service()
        publisher = publisher_for(Section(enabled=True, kubeconfig=str(kubeconfig)), service,
                                  PluginMetrics(), environ={"NODE_NAME": "worker-1"},
                                  sysfs_root=tmp_path / "sys")
        assert publisher is not None

        async def scenario() -> None:
            task = asyncio.create_task(publisher.run())
            await _until(lambda: "worker-1" in api.objects)
            task.cancel()

        asyncio.run(scenario())
        memory = api.objects["worker-1"]["zones"][0]["resources"][1]
    assert memory == {"name": "memory", "capacity": LAB_NODE_KIB * 1024,
                      "allocatable": LAB_NODE_KIB * 1024, "available": LAB_NODE_KIB * 1024}


def _service() -> PlacementService:
    service = PlacementService(CpusetEngine(DUAL_SOCKET))
    service.synchronize([], [], source="synchronize")
    return service



def test_the_daemon_built_from_its_configuration_publishes_and_follows_a_policy_reload(
        tmp_path: Path) -> None:
    from cpuset_adapters.sysfs import SysfsTopologySource
    from cpuset_cli import bootstrap
    from cpuset_cli.daemon.live_config import LiveConfig

    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path / "sys")
    source = SysfsTopologySource(tmp_path / "sys")
    with serve() as api:
        path = tmp_path / "config.toml"
        settings = (f'[runtime]\nstatus_socket = ""\ncgroup_root = "{tmp_path}"\n'
                    f'[topology_publisher]\nenabled = true\nnode_name = "worker-1"\n'
                    f'kubeconfig = "{write_kubeconfig(tmp_path / "kubeconfig", api)}"\n')
        path.write_text(settings)
        config = LiveConfig.load(path, required=True, topology=source.read_topology())
        daemon = bootstrap.build_daemon(source, environ={}, name="nri-cpuset", index="99",
                                        config=config, hotplug_interval=0)
        publisher = daemon.publisher
        assert publisher is not None
        daemon.service.synchronize([], [], source="synchronize")

        def declared() -> str:
            attributes = api.objects["worker-1"]["attributes"]
            return str({a["name"]: a["value"] for a in attributes}["topologyManagerPolicy"])

        async def scenario() -> None:
            task = asyncio.create_task(publisher.run())
            await _until(lambda: "worker-1" in api.objects)
            assert declared() == "best-effort"
            path.write_text(settings + 'policy = "single-numa-node"\n')
            assert config.reload_file("SIGHUP") is True
            await _until(lambda: declared() == "single-numa-node")
            task.cancel()

        asyncio.run(scenario())
