"""The service's decisions told as Events, through the real placement service: which pod and
container each names, the exact notes, nothing for shared containers, and a defect while
composing one that never costs the placement."""

from __future__ import annotations

import dataclasses

import pytest

from cpuset_adapters.kubernetes.event_notices import EventNotices
from cpuset_adapters.kubernetes.event_object import PlacementEvent
from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    CPUSet,
    CpusetEngine,
    RuntimeState,
    StartReport,
)
from cpuset_core.verify import Observed
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.verifier import Verifier
from tests.builders.facts import container, pod

TOPOLOGY = build_topology(DUAL_SOCKET_HT)  # 16 CPUs, n and n+8 siblings; node 0: 0-3,8-11
WEB = pod("web", qos="burstable")
DB = pod("db")


class Recorded(list[PlacementEvent]):
    """A recorder keeping what it is given."""

    def record(self, event: PlacementEvent) -> None:
        self.append(event)


class Broken:
    def record(self, event: PlacementEvent) -> None:
        raise RuntimeError("a defect")


def told(events: list[PlacementEvent]) -> list[tuple[str, str, str, str]]:
    return [(e.regarding.name, e.regarding.field_path, e.reason, e.note) for e in events]


def at(facts: ContainerFacts) -> ContainerFacts:
    return dataclasses.replace(facts, cgroups_path=f"/kubepods/{facts.id}")


@pytest.fixture
def recorded() -> Recorded:
    return Recorded()


@pytest.fixture
def service(recorded: Recorded) -> PlacementService:
    service = PlacementService(CpusetEngine(TOPOLOGY))
    service.notices = EventNotices(recorded)
    service.admit(WEB, at(container("web-1", WEB)))
    return service


def test_a_shared_container_is_not_told(service: PlacementService, recorded: Recorded) -> None:
    assert recorded == []


def test_an_integer_container_is_told_its_cpus_and_domain_on_its_pod(
        service: PlacementService, recorded: Recorded) -> None:
    service.admit(DB, container("db-1", DB, cpu_limit=2, name="db"))
    [event] = recorded
    assert event.regarding.reference() == {
        "apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "db", "uid": "uid-db",
        "fieldPath": "spec.containers{db}"}
    assert event.note == ("exclusive CPUs 0,8 (NUMA node 0, whole cores), "
                          "memory nodes not bound")


def test_a_pin_is_told_with_its_sharers_and_the_move_it_causes_names_its_pod(
        service: PlacementService, recorded: Recorded) -> None:
    service.admit(DB, container("db-1", DB, cpu_limit=2, name="db"))
    io = pod("io", pins="0")
    service.admit(io, container("io-1", io, name="io"))
    io2 = pod("io2", pins="0-1")
    service.admit(io2, container("io2-1", io2, name="io"))
    assert told(recorded[1:]) == [
        ("io", "spec.containers{io}", "PinnedCpusAssigned",
         "pinned CPUs 0 (not shared with another pod), memory nodes 0"),
        ("db", "spec.containers{db}", "MovedForPin",
         "exclusive CPUs moved from 0,8 to 1,9: pod ns/io pins 0"),
        ("io2", "spec.containers{io}", "PinnedCpusAssigned",
         "pinned CPUs 0-1 (shared with 1 other pod), memory nodes 0"),
        ("db", "spec.containers{db}", "MovedForPin",
         "exclusive CPUs moved from 1,9 to 2,10: pod ns/io2 pins 1")]


def test_a_container_found_at_a_rebuild_is_named_when_its_drift_is_repaired(
        recorded: Recorded) -> None:
    service = PlacementService(CpusetEngine(TOPOLOGY))
    service.notices = EventNotices(recorded)
    facts = at(container("db-1", DB, cpu_limit=2, name="db", cpus_now="4,12", mems_now="1"))
    service.synchronize([DB], [facts], source="Synchronize")
    service.starts.started("db-1", "ns/db/db")
    verifier = Verifier(service)
    everything = CPUSet.parse("0-15")
    placed = service.placement("db-1")
    assert placed is not None
    read_from, _ = verifier.snapshot()
    verifier.verify({"db-1": Observed(cpus=everything, mems=CPUSet([0, 1]))},
                    read_from=read_from)
    assert recorded == []  # found, not yet repaired
    verifier.verify({"db-1": Observed(cpus=placed.cpus, mems=CPUSet([0, 1]))},
                    read_from=read_from)
    assert told(recorded) == [(
        "db", "spec.containers{db}", "DriftRepaired",
        f"the kernel enforced cpuset.cpus 0-15 (check: cpus); wrote back cpuset.cpus "
        f"{placed.cpus}")]


def test_a_container_whose_start_failed_is_told_it_gave_its_cpus_back(
        service: PlacementService, recorded: Recorded) -> None:
    service.admit(DB, at(container("db-1", DB, cpu_limit=2, name="db")))
    released = service.starts.reported({"db-1": StartReport(
        state=RuntimeState.EXITED, detail="StartError: no such file")})
    assert released == ["db-1"]
    event = recorded[-1]
    assert (event.regarding.name, event.reason, event.type) == (
        "db", "CpusReleasedNeverStarted", "Warning")
    assert event.note.startswith("gave back integer CPUs 0,8: ")
    assert event.note.endswith("; a later start is refused")


def test_a_defect_while_telling_never_costs_the_placement(
        caplog: pytest.LogCaptureFixture) -> None:
    service = PlacementService(CpusetEngine(TOPOLOGY))
    notices = EventNotices(Broken())
    service.notices = notices
    first = service.admit(DB, container("db-1", DB, cpu_limit=2, name="db"))
    other = pod("db2")
    second = service.admit(other, container("db2-1", other, cpu_limit=2, name="db"))
    assert first.placement.cpus == CPUSet([0, 8])
    assert second.placement.cpus
    assert service.placement("db2-1") == second.placement
    assert notices.failures == 2
    logged = [r for r in caplog.records if r.name == "nri_cpuset.events"]
    assert len(logged) == 1  # once per notice
    assert "placements are not affected" in logged[0].getMessage()


def test_a_container_a_lagging_report_misses_is_still_named_when_a_pin_moves_it(
        service: PlacementService, recorded: Recorded) -> None:
    service.admit(DB, container("db-1", DB, cpu_limit=2, name="db"))
    # A CRI inventory taken before db-1 was created: the ledger keeps it, unlisted.
    service.synchronize([WEB], [container("web-1", WEB)], source="CRI inventory",
                        caller_applies=True, keep_unlisted=True)
    io = pod("io", pins="0")
    service.admit(io, container("io-1", io, name="io"))
    assert ("db", "spec.containers{db}", "MovedForPin",
            "exclusive CPUs moved from 0,8 to 1,9: pod ns/io pins 0") in told(recorded)


def test_a_resize_is_told_with_the_cpus_before_and_after(
        service: PlacementService, recorded: Recorded) -> None:
    service.admit(DB, container("db-1", DB, cpu_limit=2, name="db"))
    service.resize(DB, container("db-1", DB, cpu_limit=4, name="db"))
    service.resize(DB, container("db-1", DB, cpu_limit=4, name="db"))  # nothing changes
    service.resize(DB, container("db-1", DB, cpu_limit=0.5, name="db"))
    resized = [e.note for e in recorded if e.reason == "CpusResized"]
    assert resized == ["resized to exclusive CPUs 0-1,8-9 (NUMA node 0, whole cores), was on "
                       "exclusive CPUs 0,8",
                       "resized to the shared pool, was on exclusive CPUs 0-1,8-9"]


def test_a_refused_resize_is_a_warning_on_the_container(
        service: PlacementService, recorded: Recorded) -> None:
    service.admit(DB, container("db-1", DB, cpu_limit=2, name="db"))
    with pytest.raises(AdmissionError):
        service.resize(DB, container("db-1", DB, cpu_limit=40, name="db"))
    event = recorded[-1]
    assert (event.regarding.name, event.reason, event.type) == ("db", "ResizeRefused",
                                                                "Warning")
    assert event.note.startswith("resize refused, CPUs unchanged: needs 40 exclusive CPU(s)")


def test_a_quiet_cpu_repair_is_a_warning_on_each_container_holding_it(
        service: PlacementService, recorded: Recorded) -> None:
    service.admit(DB, container("db-1", DB, cpu_limit=2, name="db"))
    recorded.clear()
    service.notices.quiet_repaired({"db-1": CPUSet([0, 8]), "gone-1": CPUSet([1])}, "irq",
                                   ["/proc/irq/24/smp_affinity_list"])
    assert [(e.regarding.name, e.reason, e.type, e.note) for e in recorded] == [(
        "db", "QuietCpusRepaired", "Warning",
        "1 irq setting(s) of its quiet CPUs 0,8 found changed back and rewritten (first: "
        "/proc/irq/24/smp_affinity_list)")]
