"""The events the plugin's decisions become: their reasons, types and exact notes, and that each
passes the API server's rules once built."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cpuset_adapters.kubernetes.event_object import PlacementEvent, build_event, container
from cpuset_adapters.kubernetes.event_rules import creation_violations
from cpuset_adapters.kubernetes.placement_events import (
    cpus_resized,
    domain_of,
    drift_repaired,
    exclusive_assigned,
    moved_for_pin,
    pinned_assigned,
    released_never_started,
    resize_refused,
    shared_pool_changed,
)
from cpuset_core import Topology
from cpuset_core.verify import Mismatch
from tests.unit.core.topologies import DUAL_SOCKET, EPYC, FIRST_SIBLING_OFFLINE, cpus

DB = container(namespace="team-a", pod="db-0", pod_uid="7c1e", name="db")


def test_an_exclusive_assignment_names_its_cpus_domain_whole_cores_and_memory() -> None:
    event = exclusive_assigned(DB, cpus=cpus("4,12"), mems=cpus("1"), topology=DUAL_SOCKET)
    assert (event.reason, event.type, event.action) == ("ExclusiveCpusAssigned", "Normal",
                                                        "AssignCpus")
    assert event.note == "exclusive CPUs 4,12 (NUMA node 1, whole cores), memory nodes 1"


def test_an_exclusive_assignment_without_bound_memory_says_so() -> None:
    event = exclusive_assigned(DB, cpus=cpus("4-5"), mems=None, topology=DUAL_SOCKET)
    assert event.note == ("exclusive CPUs 4-5 (NUMA node 1, not whole cores), "
                          "memory nodes not bound")


@pytest.mark.parametrize(("topology", "cpus_text", "domain"), [
    (EPYC, "0-1,16-17", "L3 group 0-3,16-19 of NUMA node 0, whole cores"),
    (EPYC, "0-5", "NUMA node 0, not whole cores"),
    (EPYC, "7-8,23-24", "NUMA nodes 0-1, whole cores"),
    (DUAL_SOCKET, "0-3,8-11", "NUMA node 0, whole cores"),
    # Core {0}'s sibling is offline: CPU 0 alone is that whole core.
    (FIRST_SIBLING_OFFLINE, "0", "NUMA node 0, whole cores"),
])
def test_the_domain_is_the_smallest_that_holds_the_cpus(topology: Topology, cpus_text: str,
                                                        domain: str) -> None:
    assert domain_of(cpus(cpus_text), topology) == domain


def test_a_pin_says_how_many_other_pods_share_its_cpus() -> None:
    alone = pinned_assigned(DB, cpus=cpus("2-3"), mems=cpus("0"), sharing_pods=0)
    shared = pinned_assigned(DB, cpus=cpus("2-3"), mems=cpus("0"), sharing_pods=2)
    one = pinned_assigned(DB, cpus=cpus("2"), mems=None, sharing_pods=1)
    assert alone.reason == "PinnedCpusAssigned"
    assert alone.note == "pinned CPUs 2-3 (not shared with another pod), memory nodes 0"
    assert shared.note == "pinned CPUs 2-3 (shared with 2 other pods), memory nodes 0"
    assert one.note == "pinned CPUs 2 (shared with 1 other pod), memory nodes not bound"


def test_a_move_names_both_cpu_sets_and_the_pod_whose_pin_caused_it() -> None:
    event = moved_for_pin(DB, previous=cpus("4,12"), cpus=cpus("5,13"),
                          pinned_by="team-b/io-0", pinned=cpus("3-4"))
    assert (event.reason, event.action) == ("MovedForPin", "MoveCpus")
    # The pin's CPUs it had: CPU 12 moved only as 4's sibling (a whole core).
    assert event.note == "exclusive CPUs moved from 4,12 to 5,13: pod team-b/io-0 pins 4"


def test_repaired_drift_says_what_the_kernel_showed_by_which_check_and_what_was_written() -> None:
    cpus_drift = Mismatch(container_id="c1", subject="team-a/db-0/db", cause="cpus",
                          expected_cpus=cpus("4-5"), observed_cpus=cpus("0-15"))
    mems_drift = Mismatch(container_id="c1", subject="team-a/db-0/db", cause="mems",
                          expected_cpus=cpus("4-5"), observed_cpus=cpus("4-5"),
                          expected_mems=cpus("1"), observed_mems=cpus("0-1"))
    event = drift_repaired(DB, cpus_drift)
    assert (event.reason, event.type) == ("DriftRepaired", "Warning")
    assert event.note == ("the kernel enforced cpuset.cpus 0-15 (check: cpus); wrote back "
                          "cpuset.cpus 4-5")
    assert drift_repaired(DB, mems_drift).note == (
        "the kernel enforced cpuset.mems 0-1 (check: mems); wrote back cpuset.mems 1")


def test_cpus_given_back_by_a_container_that_never_ran_are_a_warning() -> None:
    event = released_never_started(DB, kind="integer", cpus=cpus("4-5"),
                                   why="its start failed (exited)")
    assert (event.reason, event.type) == ("CpusReleasedNeverStarted", "Warning")
    assert event.note == ("gave back integer CPUs 4-5: its start failed (exited); a later "
                          "start is refused")
    shared = released_never_started(DB, kind="shared", cpus=cpus(""), why="gone")
    assert shared.note == ("gave back its place in the shared pool (shared): gone; a later "
                           "start is refused")


def test_the_shared_pool_change_is_one_event_on_the_node() -> None:
    event = shared_pool_changed("worker-1", before=cpus("0-15"), after=cpus("0-3,8-11"))
    assert event.regarding.kind == "Node"
    assert (event.regarding.name, event.reason) == ("worker-1", "SharedPoolChanged")
    assert event.note == "shared pool 0-3,8-11 (8 CPUs), was 0-15 (16 CPUs)"
    single = shared_pool_changed("worker-1", before=cpus("0-1"), after=cpus("1"))
    assert single.note == "shared pool 1 (1 CPU), was 0-1 (2 CPUs)"


def every_event() -> list[PlacementEvent]:
    drift = Mismatch(container_id="c1", subject="s", cause="cpus", expected_cpus=cpus("1"),
                     observed_cpus=None)
    return [exclusive_assigned(DB, cpus=cpus("4-5"), mems=None, topology=DUAL_SOCKET),
            pinned_assigned(DB, cpus=cpus("2"), mems=None, sharing_pods=0),
            moved_for_pin(DB, previous=cpus("4"), cpus=cpus("5"), pinned_by="a/b",
                          pinned=cpus("4")),
            drift_repaired(DB, drift),
            released_never_started(DB, kind="annotated", cpus=cpus("2"), why="x"),
            cpus_resized(DB, before=cpus("4"), after=cpus(""), topology=DUAL_SOCKET),
            resize_refused(DB, detail="x" * 2000),
            shared_pool_changed("worker-1", before=cpus("0-1"), after=cpus(""))]


def test_every_event_passes_the_api_servers_rules() -> None:
    at = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    for event in every_event():
        assert creation_violations(build_event(event, instance="worker-1", at=at)) == []


def test_a_resize_names_the_cpus_before_and_after_and_a_refusal_is_a_warning() -> None:
    grown = cpus_resized(DB, before=cpus("4,12"), after=cpus("4-5,12-13"),
                         topology=DUAL_SOCKET)
    assert (grown.reason, grown.type) == ("CpusResized", "Normal")
    assert grown.note == ("resized to exclusive CPUs 4-5,12-13 (NUMA node 1, whole cores), "
                          "was on exclusive CPUs 4,12")
    assert cpus_resized(DB, before=cpus(""), after=cpus("4"), topology=DUAL_SOCKET).note == (
        "resized to exclusive CPUs 4 (NUMA node 1, not whole cores), was on the shared pool")
    refused = resize_refused(DB, detail="needs 9 exclusive CPU(s) but only 2 are free")
    assert (refused.reason, refused.type) == ("ResizeRefused", "Warning")
    assert refused.note == ("resize refused, CPUs unchanged: needs 9 exclusive CPU(s) but "
                            "only 2 are free")
