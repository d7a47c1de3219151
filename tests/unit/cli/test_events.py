"""``[events]`` in the daemon: none when off or unable to start (logged), the daemon built from
its configuration writing its decisions' Events to a fake API server and counting them, and
the shared pool's changes told on the node at most once per interval."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from cpuset_adapters.config import Config, Events
from cpuset_adapters.config import TopologyPublisher as PublisherSection
from cpuset_adapters.kubernetes.event_object import PlacementEvent
from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_cli import bootstrap
from cpuset_cli.daemon.events import SharedPoolEvents, events_for
from cpuset_cli.daemon.live_config import LiveConfig
from cpuset_core import CPUSet, CpusetEngine
from cpuset_lab.machines import DUAL_SOCKET_HT, write_sysfs_tree
from cpuset_service.placement import PlacementService
from tests.builders.facts import container, pod
from tests.support.kube_api import serve, write_kubeconfig
from tests.support.metrics_text import value
from tests.unit.core.topologies import DUAL_SOCKET


class Recorded(list[PlacementEvent]):
    def record(self, event: PlacementEvent) -> None:
        self.append(event)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def configured(**events: object) -> Callable[[], Config]:
    config = Config(events=Events(**events),  # type: ignore[arg-type]
                    topology_publisher=PublisherSection(node_name="worker-1"))
    return lambda: config


def test_off_by_default_there_are_no_events() -> None:
    service = PlacementService(CpusetEngine(DUAL_SOCKET))
    assert events_for(Config, service, environ={"NODE_NAME": "worker-1"}) is None


def test_without_credentials_no_events_start_and_the_log_says_why(
        caplog: pytest.LogCaptureFixture) -> None:
    service = PlacementService(CpusetEngine(DUAL_SOCKET))
    assert events_for(configured(enabled=True), service, environ={}) is None
    assert "events not started" in caplog.text
    assert "not in a cluster" in caplog.text


def test_the_first_pool_is_the_baseline_and_a_change_is_told_at_once() -> None:
    recorded, clock = Recorded(), Clock()
    pool = SharedPoolEvents(recorded, "worker-1", interval=lambda: 60, clock=clock)
    pool.look(None)  # not synchronized: nothing to tell
    pool.look(CPUSet.parse("0-15"))
    pool.look(CPUSet.parse("0-15"))
    assert recorded == []
    pool.look(CPUSet.parse("2-15"))
    [event] = recorded
    assert (event.regarding.kind, event.regarding.name) == ("Node", "worker-1")
    assert event.note == "shared pool 2-15 (14 CPUs), was 0-15 (16 CPUs)"


def test_changes_within_the_interval_are_folded_into_one_event_after_it() -> None:
    recorded, clock = Recorded(), Clock()
    pool = SharedPoolEvents(recorded, "worker-1", interval=lambda: 60, clock=clock)
    pool.look(CPUSet.parse("0-15"))
    pool.look(CPUSet.parse("2-15"))
    for later in ("4-15", "6-15", "4-15"):
        clock.now += 10
        pool.look(CPUSet.parse(later))
    assert len(recorded) == 1
    clock.now += 30  # 60 s after the first was told
    pool.look(CPUSet.parse("4-15"))
    assert [e.note for e in recorded] == [
        "shared pool 2-15 (14 CPUs), was 0-15 (16 CPUs)",
        "shared pool 4-15 (12 CPUs), was 2-15 (14 CPUs)"]


def test_a_pool_back_where_it_was_told_is_not_news() -> None:
    recorded, clock = Recorded(), Clock()
    pool = SharedPoolEvents(recorded, "worker-1", interval=lambda: 60, clock=clock)
    pool.look(CPUSet.parse("0-15"))
    pool.look(CPUSet.parse("2-15"))
    clock.now += 10
    pool.look(CPUSet.parse("0-15"))
    clock.now += 100
    pool.look(CPUSet.parse("2-15"))  # as last told
    assert len(recorded) == 1


async def _until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    """Wait until ``condition`` holds; ``seconds`` is a hang guard, never a verdict on speed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def test_the_daemon_built_with_events_on_writes_its_decisions_and_counts_them(
        tmp_path: Path) -> None:
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path / "sys")
    source = SysfsTopologySource(tmp_path / "sys")
    with serve() as api:
        path = tmp_path / "config.toml"
        path.write_text(f'[runtime]\nstatus_socket = ""\ncgroup_root = "{tmp_path}"\n'
                        f'[topology_publisher]\nnode_name = "worker-1"\n'
                        f'kubeconfig = "{write_kubeconfig(tmp_path / "kubeconfig", api)}"\n'
                        f'[events]\nenabled = true\nshared_pool_interval = 1\n')
        config = LiveConfig.load(path, required=True, topology=source.read_topology())
        daemon = bootstrap.build_daemon(source, environ={}, name="nri-cpuset", index="99",
                                        config=config, hotplug_interval=0)
        assert daemon.events is not None
        assert daemon.publisher is None  # the events alone: the publisher stays off
        service = daemon.service
        service.synchronize([], [], source="synchronize")

        def reasons() -> list[str]:
            return sorted(e["reason"] for e in api.events.values())

        async def scenario() -> None:
            assert daemon.events is not None
            task = asyncio.create_task(daemon.events.run())
            pool = daemon.events.pool
            await _until(lambda: pool.told is not None)  # the baseline
            db = pod("db")
            service.admit(db, container("db-1", db, cpu_limit=2, name="db"))
            await _until(lambda: reasons() == ["ExclusiveCpusAssigned", "SharedPoolChanged"])
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())
        [node_event] = [e for e in api.events.values() if e["reason"] == "SharedPoolChanged"]
    assert node_event["regarding"] == {"apiVersion": "v1", "kind": "Node", "name": "worker-1",
                                       "uid": "worker-1"}
    assert node_event["metadata"]["namespace"] == "default"
    assert node_event["note"] == "shared pool 1-7,9-15 (14 CPUs), was 0-15 (16 CPUs)"
    assert value(daemon.metrics, "nri_cpuset_events_total", outcome="sent") == 2
    assert value(daemon.metrics, "nri_cpuset_events_total", outcome="dropped") == 0
    assert value(daemon.metrics, "nri_cpuset_event_send_failures_total",
                 reason="forbidden") == 0
    assert value(daemon.metrics, "nri_cpuset_events_pending") == 0


def test_the_interval_is_read_at_each_look_so_a_reload_applies_at_once() -> None:
    recorded, clock, interval = Recorded(), Clock(), [60]
    pool = SharedPoolEvents(recorded, "worker-1", interval=lambda: interval[0], clock=clock)
    pool.look(CPUSet.parse("0-15"))
    pool.look(CPUSet.parse("2-15"))
    clock.now += 5
    pool.look(CPUSet.parse("4-15"))
    assert len(recorded) == 1  # within 60 s
    interval[0] = 1  # events.shared_pool_interval reloaded
    pool.look(CPUSet.parse("4-15"))
    assert [e.note for e in recorded][-1] == "shared pool 4-15 (12 CPUs), was 2-15 (14 CPUs)"
