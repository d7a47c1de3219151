"""The start use cases: what a container not seen to start holds, when it gives it back, and
the room made before a refusal."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

import pytest

from cpuset_core import (
    ContainerFacts,
    CPUSet,
    CpusetEngine,
    Kind,
    PodFacts,
    RuntimeState,
    SharedPoolExhaustedError,
    StartReport,
    StartTooLateError,
)
from cpuset_lab.machines import MachineShape, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.starts import StartTracker
from tests.builders.facts import container, pod

TOPOLOGY = build_topology(MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=2,
                                       threads_per_core=1))
"""CPUs 0-1, like the e2e machine: room for one exclusive CPU beside the shared pool."""
EXITED = StartReport(state=RuntimeState.EXITED, detail="StartError: no such file")
CREATED = StartReport(state=RuntimeState.CREATED, age=5.0)
RUNNING = StartReport(state=RuntimeState.RUNNING, age=5.0)


class Probe:
    """A start probe answering from a table, recording what it was asked."""

    def __init__(self, reports: Mapping[str, StartReport] | None = None, *,
                 fails: bool = False) -> None:
        self.table = dict(reports or {})
        self.asked: list[dict[str, str]] = []
        self.fails = fails

    def reports(self, cgroup_paths: Mapping[str, str]) -> Mapping[str, StartReport]:
        self.asked.append(dict(cgroup_paths))
        if self.fails:
            raise OSError("the runtime did not answer")
        return {cid: self.table[cid] for cid in cgroup_paths if cid in self.table}


class Counting:
    """An observer counting what the service reports about containers that will not run."""

    def __init__(self) -> None:
        self.not_running_: list[tuple[Kind, str]] = []
        self.failed_checks = 0

    def not_running(self, kind: Kind, reason: str) -> None:
        self.not_running_.append((kind, reason))

    def start_check_failed(self) -> None:
        self.failed_checks += 1

    def __getattr__(self, _name: str) -> object:  # every other observation: ignored
        return lambda *_args: None


def at(facts: ContainerFacts) -> ContainerFacts:
    return dataclasses.replace(facts, cgroups_path=f"/kubepods/{facts.id}")


def node() -> tuple[PlacementService, Counting]:
    """The service with one running shared container (so the pool may not become empty)."""
    observer = Counting()
    service = PlacementService(CpusetEngine(TOPOLOGY), observer=observer)
    service.admit(WEB, at(container("web-1", WEB)))
    service.starts.started("web-1", "ns/web/main")
    return service, observer


WEB, DB, DB2 = pod("web", qos="burstable"), pod("db"), pod("db2")


def test_a_failed_start_gives_its_exclusive_cpu_back_to_the_shared_pool(
        caplog: pytest.LogCaptureFixture) -> None:
    service, observer = node()
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    assert len(service.engine.shared_pool()) == 1
    assert service.starts.waiting() == {"db-1": "/kubepods/db-1"}
    with caplog.at_level(logging.INFO, logger="nri_cpuset.decisions"):
        released = service.starts.reported({"db-1": EXITED})
    assert released == ["db-1"]
    assert "db-1" not in service.ledger
    assert service.engine.shared_pool() == TOPOLOGY.online
    assert service.pusher.pending() >= {"web-1"}  # the pool's growth goes out
    assert observer.not_running_ == [(Kind.INTEGER, "start-failed")]
    assert [r.reason for r in caplog.records if r.getMessage() == "release"] == [
        "not running: exited without running: its start failed (StartError: no such file)"]


def test_a_container_slow_to_start_keeps_its_cpu_within_the_grace_and_then_gives_it_back() -> None:
    service, _ = node()
    service.starts.grace = 30
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    assert service.starts.reported({"db-1": CREATED}) == []
    assert len(service.ledger.exclusive) == 1
    late = StartReport(state=RuntimeState.CREATED, age=30.0)
    assert service.starts.reported({"db-1": late}) == ["db-1"]
    assert service.ledger.exclusive == CPUSet()
    with pytest.raises(StartTooLateError, match="created 30 s ago and not started within the "
                                                "30 s grace, so its CPUs were given back"):
        service.starts.started("db-1", "ns/db/main")


def test_a_container_seen_to_start_is_never_judged_again() -> None:
    service, _ = node()
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    service.starts.started("db-1", "ns/db/main")
    assert service.starts.waiting() == {}
    # A probe that read before the start was answered: its report is stale.
    assert service.starts.reported({"db-1": EXITED}) == []
    assert len(service.ledger.exclusive) == 1


def test_a_probe_that_sees_it_running_ends_its_wait() -> None:
    service, _ = node()
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    assert service.starts.reported({"db-1": RUNNING}) == []
    assert service.starts.waiting() == {}
    # runc's init in the cgroup while the task is created: it keeps its CPUs, and still waits
    # (a failed creation removes the cgroup; the next look sees the runtime's verdict).
    tasks = StartReport(state=RuntimeState.CREATED, age=500.0, has_tasks=True)
    service.admit(DB2, at(container("db2-1", DB2)))
    assert service.starts.reported({"db2-1": tasks}) == []
    assert "db2-1" in service.ledger
    assert "db2-1" in service.starts.waiting()


def test_a_refusal_for_room_first_gives_back_what_a_dead_container_holds() -> None:
    service, observer = node()
    probe = Probe({"db-1": EXITED})
    service.starts.probe = probe
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    held = service.ledger.exclusive
    admission = service.admit(DB2, at(container("db2-1", DB2, cpu_limit=1)))
    assert admission.placement.cpus == held
    assert probe.asked == [{"db-1": "/kubepods/db-1"}]  # only waiting holders: not web-1
    assert observer.not_running_ == [(Kind.INTEGER, "start-failed")]


def test_a_holder_slow_to_start_is_not_taken_from_and_the_refusal_stands() -> None:
    service, _ = node()
    service.starts.probe = Probe({"db-1": CREATED})
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    with pytest.raises(SharedPoolExhaustedError):
        service.admit(DB2, at(container("db2-1", DB2, cpu_limit=1)))
    assert service.ledger.entries["db-1"].cpus == service.ledger.exclusive


def test_a_runtime_that_cannot_tell_leaves_the_refusal_as_it_was_and_is_counted() -> None:
    service, observer = node()
    service.starts.probe = Probe(fails=True)
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    with pytest.raises(SharedPoolExhaustedError):
        service.admit(DB2, at(container("db2-1", DB2, cpu_limit=1)))
    assert observer.failed_checks == 1
    assert "db-1" in service.ledger


def test_without_a_probe_nothing_is_asked_before_a_refusal() -> None:
    service, _ = node()
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    with pytest.raises(SharedPoolExhaustedError):
        service.admit(DB2, at(container("db2-1", DB2, cpu_limit=1)))


def test_a_rebuild_makes_the_reported_created_containers_wait_and_forgets_given_up_ones() -> None:
    service, _ = node()
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    service.starts.reported({"db-1": EXITED})
    pods: list[PodFacts] = [WEB, DB2]
    listed = [at(container("web-1", WEB)), at(container("db2-1", DB2, cpu_limit=1))]
    service.synchronize(pods, listed, source="synchronize", unstarted={"db2-1"})
    assert service.starts.waiting() == {"db2-1": "/kubepods/db2-1"}
    service.starts.started("db-1", "ns/db/main")  # no longer remembered: not refused


def test_a_container_given_up_and_found_again_at_a_rebuild_is_still_refused_its_start() -> None:
    service, _ = node()
    service.starts.grace = 1
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    service.starts.reported({"db-1": StartReport(state=RuntimeState.CREATED, age=2.0)})
    service.synchronize([WEB, DB], [at(container("web-1", WEB)),
                                    at(container("db-1", DB, cpu_limit=1))],
                        source="synchronize", unstarted={"db-1"})
    assert "db-1" in service.ledger
    with pytest.raises(StartTooLateError):
        service.starts.started("db-1", "ns/db/main")


def test_the_tracker_forgets_a_removed_container_and_keeps_a_lagging_reports_waiting() -> None:
    tracker = StartTracker()
    tracker.placed("a")
    tracker.placed("b")
    tracker.gave_up("c", "why")
    tracker.adopted(listed=["a", "c"], unstarted=[], live=["a", "b", "c"])
    assert tracker.waiting == {"b"}  # "a" listed as running; "b" not listed yet
    assert tracker.started("c") == "why"
    tracker.forget("c")
    assert tracker.started("c") is None


def test_a_dead_shared_container_does_not_keep_the_pool_from_emptying() -> None:
    """The soak found it: a shared pod whose start failed still counted as a shared container
    that needs the pool, and an integer pod that fits once it is gone was refused."""
    observer = Counting()
    service = PlacementService(CpusetEngine(TOPOLOGY), observer=observer)
    service.starts.probe = Probe({"web-1": EXITED})
    service.admit(DB, at(container("db-1", DB, cpu_limit=1)))
    service.starts.started("db-1", "ns/db/main")
    service.admit(WEB, at(container("web-1", WEB)))  # its start then fails
    admission = service.admit(DB2, at(container("db2-1", DB2, cpu_limit=1)))
    assert len(admission.placement.cpus) == 1
    assert "web-1" not in service.ledger
    assert observer.not_running_ == [(Kind.SHARED, "start-failed")]
