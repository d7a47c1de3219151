"""The topology publisher on the real placement service: the published numbers follow pins,
integer containers, releases, hotplug and configuration reloads; a burst is one write; nothing
is published before the state is rebuilt; failures are logged once, counted and retried with
back-off. Time is a fake clock; each ``tick`` is one look of the background task.

DUAL_SOCKET: node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8 are siblings.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from cpuset_adapters.kubernetes.api_client import ApiError
from cpuset_adapters.kubernetes.node_memory import NodeMemoryError
from cpuset_adapters.observability.metrics import PluginMetrics
from cpuset_cli.daemon import topology_publisher as module
from cpuset_cli.daemon.topology_publisher import TopologyPublisher
from cpuset_core import CPUSet, CpusetEngine, Settings, Topology
from cpuset_service.placement import PlacementService
from tests.builders.facts import container, pod
from tests.support.metrics_text import value
from tests.unit.core.topologies import DUAL_SOCKET

GIB = 1 << 30


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Writer:
    """Records every object; raises ``failure`` while it is set."""

    def __init__(self) -> None:
        self.objects: list[dict[str, Any]] = []
        self.failure: ApiError | None = None
        self.calls = 0

    def apply(self, obj: dict[str, Any]) -> str:
        self.calls += 1
        if self.failure is not None:
            raise self.failure
        self.objects.append(obj)
        return "created" if len(self.objects) == 1 else "updated"


class Rig:
    """A synchronized service, its publisher, the fake clock, writer and metrics."""

    def __init__(self, settings: Settings | None = None, *,
                 memory: Mapping[int, int] | None = None) -> None:
        self.service = PlacementService(CpusetEngine(DUAL_SOCKET, settings))
        self.clock, self.writer, self.metrics = Clock(), Writer(), PluginMetrics()
        self.policy = "best-effort"
        self.memory: Mapping[int, int] | Exception = memory or {0: 16 * GIB, 1: 16 * GIB}
        self.publisher = TopologyPublisher(
            self.service, self.writer, node_name="worker-1", read_memory=self.read_memory,
            policy=lambda: self.policy, observer=self.metrics, clock=self.clock)

    def read_memory(self) -> Mapping[int, int]:
        if isinstance(self.memory, Exception):
            raise self.memory
        return self.memory

    def synchronize(self) -> None:
        self.service.synchronize([], [], source="synchronize")

    def tick(self, after: float = 0.1) -> None:
        self.clock.now += after
        asyncio.run(self.publisher.tick())

    def settle(self) -> None:
        """Long enough quiet for any change to be published (one tick after SETTLE)."""
        self.tick(0.0)
        self.tick(module.SETTLE + 0.05)

    def available(self) -> dict[str, int]:
        obj = self.writer.objects[-1]
        return {z["name"]: z["resources"][0]["available"] for z in obj["zones"]}

    def count(self, result: str) -> float:
        return value(self.metrics, "nri_cpuset_topology_publishes_total", result=result) or 0.0

    def integer(self, name: str, cpus: int) -> CPUSet:
        p = pod(name)
        return self.service.admit(p, container(name, p, cpu_limit=cpus)).placement.cpus

    def pin(self, name: str, cpus: str) -> None:
        p = pod(name, qos="burstable", pins=cpus)
        self.service.admit(p, container(name, p))

    def shared(self, name: str) -> None:
        p = pod(name, qos="burstable")
        self.service.admit(p, container(name, p))


def test_nothing_is_published_before_the_state_is_rebuilt_from_the_runtime() -> None:
    rig = Rig()
    for _ in range(20):
        rig.tick(1.0)
    assert rig.writer.calls == 0
    rig.synchronize()
    rig.settle()
    assert rig.available() == {"node-0": 8, "node-1": 8}


def test_a_change_is_published_within_a_second_once_quiet_and_not_before_it_settles() -> None:
    rig = Rig()
    rig.synchronize()
    rig.tick()
    assert rig.writer.calls == 0  # just seen: waits for the burst to end
    rig.tick(module.SETTLE)
    assert rig.writer.calls == 1
    rig.integer("db", 2)
    rig.tick()
    rig.tick(module.SETTLE)
    assert rig.writer.calls == 2


def test_the_numbers_follow_integer_containers_pins_and_releases() -> None:
    rig = Rig()
    rig.synchronize()
    rig.settle()
    db = rig.integer("db", 3)
    rig.settle()
    on_0 = len(db & DUAL_SOCKET.cpus_of_numa(0))
    assert rig.available() == {"node-0": 8 - on_0, "node-1": 8 - (3 - on_0)}
    rig.pin("io", "15")
    rig.settle()
    assert rig.available()["node-1"] == 8 - (3 - on_0) - 1
    rig.service.stop("db", "ns/db/main")
    rig.service.remove("io", "ns/io/main")
    rig.settle()
    assert rig.available() == {"node-0": 8, "node-1": 8}


def test_running_shared_containers_keep_the_pools_floor_out_of_the_numbers() -> None:
    rig = Rig(Settings(min_shared_pool=10))
    rig.synchronize()
    rig.shared("web")
    rig.settle()
    assert rig.available() == {"node-0": 6, "node-1": 6}  # 16 - 10 spare, 8 at most a node


def test_a_hotplug_changes_capacity_and_availability() -> None:
    rig = Rig()
    rig.synchronize()
    rig.settle()
    offline = CPUSet.parse("4-7")
    rig.service.topology_changed(Topology(cpus=DUAL_SOCKET.cpus,
                                          online=DUAL_SOCKET.online - offline,
                                          numa_distances=DUAL_SOCKET.numa_distances))
    rig.settle()
    zone = rig.writer.objects[-1]["zones"][1]["resources"][0]
    assert (zone["capacity"], zone["available"]) == (4, 4)


def test_a_reload_of_live_settings_and_of_the_declared_policy_is_published() -> None:
    rig = Rig()
    rig.synchronize()
    rig.shared("web")
    rig.settle()
    rig.service.reconfigure(Settings(min_shared_pool=12))
    rig.policy = "single-numa-node"
    rig.settle()
    assert rig.available() == {"node-0": 4, "node-1": 4}
    attributes = {a["name"]: a["value"] for a in rig.writer.objects[-1]["attributes"]}
    assert attributes["topologyManagerPolicy"] == "single-numa-node"


def test_a_burst_of_decisions_is_one_write() -> None:
    rig = Rig()
    rig.synchronize()
    rig.settle()
    written = rig.writer.calls
    for n in range(6):
        rig.integer(f"db{n}", 1)
        rig.tick(0.05)
    rig.settle()
    assert rig.writer.calls == written + 1
    assert sum(rig.available().values()) == 16 - 6


def test_a_node_that_never_settles_still_publishes_within_a_second() -> None:
    rig = Rig()
    rig.synchronize()
    rig.settle()
    written, started = rig.writer.calls, rig.clock.now
    for n in range(12):
        rig.integer(f"db{n}", 1)  # a change every tick: never quiet for SETTLE
        rig.tick()
        if rig.writer.calls > written:
            break
    assert rig.writer.calls == written + 1
    assert rig.clock.now - started <= 1.0


def test_an_unchanged_object_is_written_again_after_the_resync_period() -> None:
    rig = Rig()
    rig.synchronize()
    rig.settle()
    rig.tick(module.RESYNC / 2)
    assert rig.writer.calls == 1
    rig.tick(module.RESYNC / 2)
    assert rig.writer.calls == 2


def test_failures_are_logged_once_counted_and_retried_with_back_off(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="nri_cpuset.topology")
    rig = Rig()
    rig.synchronize()
    rig.writer.failure = ApiError("forbidden", "HTTP 403: cannot patch", 403)
    rig.settle()
    attempts = [rig.clock.now]
    for _ in range(600):  # a minute, a look every 0.1 s
        calls = rig.writer.calls
        rig.tick()
        if rig.writer.calls > calls:
            attempts.append(rig.clock.now)
    gaps = [round(b - a) for a, b in itertools.pairwise(attempts)]
    assert gaps[:5] == [1, 2, 4, 8, 16]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "not published (forbidden): HTTP 403: cannot patch" in errors[0].getMessage()
    assert rig.count("forbidden") == len(attempts)
    assert rig.metrics.topology_is_current() is False
    rig.integer("db", 2)  # decisions go on regardless
    rig.writer.failure = None
    for _ in range(400):
        rig.tick()
    assert rig.count("created") == 1
    assert sum(rig.available().values()) == 14
    assert rig.metrics.topology_is_current() is True
    assert "created after" in caplog.text


def test_a_new_failure_reason_is_logged_again(caplog: pytest.LogCaptureFixture) -> None:
    rig = Rig()
    rig.synchronize()
    rig.writer.failure = ApiError("unreachable", "connection refused")
    rig.settle()
    rig.writer.failure = ApiError("crd-missing", "no CRD", 404)
    for _ in range(30):
        rig.tick()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2
    assert "(unreachable)" in errors[0]
    assert "(crd-missing)" in errors[1]


def test_unreadable_memory_holds_publishing_and_is_tried_again(
        caplog: pytest.LogCaptureFixture) -> None:
    rig = Rig()
    rig.memory = NodeMemoryError("/sys/devices/system/node/node0/meminfo: gone")
    rig.synchronize()
    for _ in range(30):
        rig.tick()
    assert rig.writer.calls == 0
    assert caplog.text.count("cannot read the NUMA nodes' memory") == 1
    rig.memory = {0: GIB, 1: GIB}
    rig.tick(module.MEMORY_RETRY)
    rig.settle()
    assert rig.writer.calls == 1
