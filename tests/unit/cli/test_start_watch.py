"""The daemon's start watch: which containers it asks about, and when."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
from collections.abc import Mapping

import pytest

from cpuset_cli.daemon.start_watch import StartWatch
from cpuset_core import CpusetEngine, RuntimeState, StartReport
from cpuset_lab.machines import MachineShape, build_topology
from cpuset_service.placement import PlacementService
from tests.builders.facts import container, pod

TOPOLOGY = build_topology(MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=4,
                                       threads_per_core=1))
DB = pod("db")


class Probe:
    def __init__(self, answer: Mapping[str, StartReport] | None = None, *,
                 fails: bool = False) -> None:
        self.answer = dict(answer or {})
        self.fails = fails
        self.asked: list[set[str]] = []

    def reports(self, cgroup_paths: Mapping[str, str]) -> Mapping[str, StartReport]:
        self.asked.append(set(cgroup_paths))
        if self.fails:
            raise OSError("connection refused")
        return {cid: self.answer[cid] for cid in cgroup_paths if cid in self.answer}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def rig(probe: Probe) -> tuple[PlacementService, StartWatch, Clock]:
    service = PlacementService(CpusetEngine(TOPOLOGY))
    service.synchronize([], [], source="synchronize")
    clock = Clock()
    return service, StartWatch(service, probe, settle=1.0, clock=clock), clock


def admit(service: PlacementService, cid: str) -> None:
    service.admit(DB, dataclasses.replace(container(cid, DB, cpu_limit=1),
                                          cgroups_path=f"/kubepods/{cid}"))


def test_a_container_is_asked_about_only_once_it_has_waited_the_settle_time() -> None:
    probe = Probe({"a": StartReport(state=RuntimeState.EXITED)})
    service, watch, clock = rig(probe)
    admit(service, "a")
    asyncio.run(watch.look())
    assert probe.asked == []  # a healthy start is quicker: no CRI call
    clock.now += 1.0
    asyncio.run(watch.look())
    assert probe.asked == [{"a"}]
    assert "a" not in service.ledger


def test_a_container_that_started_is_never_asked_about() -> None:
    probe = Probe()
    service, watch, clock = rig(probe)
    admit(service, "a")
    asyncio.run(watch.look())
    service.starts.started("a", "ns/db/main")
    clock.now += 5
    asyncio.run(watch.look())
    assert probe.asked == []


def test_nothing_is_asked_before_the_state_was_rebuilt() -> None:
    probe = Probe()
    service, watch, clock = rig(probe)
    admit(service, "a")
    asyncio.run(watch.look())
    service.disconnected()
    clock.now += 5
    asyncio.run(watch.look())
    assert probe.asked == []


def test_a_probe_that_fails_is_logged_once_counted_every_time_and_decides_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    probe = Probe(fails=True)
    service, watch, clock = rig(probe)
    admit(service, "a")
    asyncio.run(watch.look())
    clock.now += 2
    with caplog.at_level(logging.INFO, logger="nri_cpuset.daemon"):
        for _ in range(3):
            asyncio.run(watch.look())
        probe.fails = False
        asyncio.run(watch.look())
    assert [r.levelname for r in caplog.records if r.name == "nri_cpuset.daemon"] == [
        "WARNING", "INFO"]
    assert service.statistics.snapshot()["start_checks_failed"] == 3
    assert "a" in service.ledger


def test_a_container_still_created_is_asked_about_again_after_a_gap_doubling_up_to_a_cap(
        ) -> None:
    probe = Probe({"a": StartReport(state=RuntimeState.CREATED, age=2.0)})
    service, watch, clock = rig(probe)
    admit(service, "a")
    asyncio.run(watch.look())
    asked_at = []
    for _ in range(160):  # 20 s in looks an eighth of a second apart (exact in binary)
        clock.now += 0.125
        before = len(probe.asked)
        asyncio.run(watch.look())
        if len(probe.asked) > before:
            asked_at.append(clock.now)
    gaps = [b - a for a, b in itertools.pairwise(asked_at)]
    assert gaps[:3] == [0.5, 1.0, 2.0]
    assert set(gaps[3:]) == {2.0}


def test_a_slow_start_that_fails_late_gives_its_cpus_back_within_the_cap() -> None:
    probe = Probe({"a": StartReport(state=RuntimeState.CREATED, age=1.0)})
    service, watch, clock = rig(probe)
    admit(service, "a")
    for _ in range(48):  # runc takes 6 s to fail creating the task
        clock.now += 0.125
        asyncio.run(watch.look())
    probe.answer["a"] = StartReport(state=RuntimeState.EXITED, age=7.0)
    failed = clock.now
    while "a" in service.ledger:
        clock.now += 0.125
        asyncio.run(watch.look())
    assert clock.now - failed <= 2.0


def test_the_next_attempt_after_a_released_one_is_released_too() -> None:
    probe = Probe()
    service, watch, clock = rig(probe)

    def fails_after_two_seconds(cid: str) -> None:
        admit(service, cid)
        failed_at = clock.now + 3.0  # runc takes a while to fail creating the task
        probe.answer[cid] = StartReport(state=RuntimeState.CREATED, age=1.0)
        while cid in service.ledger:
            assert clock.now < failed_at + 2.0, f"{cid} still held"
            clock.now += 0.125
            if clock.now >= failed_at:
                probe.answer[cid] = StartReport(state=RuntimeState.EXITED, age=3.0)
            asyncio.run(watch.look())

    fails_after_two_seconds("attempt-0")
    clock.now += 80.0  # the kubelet's back-off
    fails_after_two_seconds("attempt-1")
