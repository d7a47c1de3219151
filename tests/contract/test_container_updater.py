"""Contract of the ContainerUpdater port, run against every adapter that implements it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cpuset_adapters.dry_run import DryRunHost
from cpuset_core import ContainerFacts, ContainerUpdate, ContainerUpdater, CPUSet, Kind
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology

# Each factory returns (updater, start a container with a cpuset, read a container's cpuset).
Harness = tuple[ContainerUpdater, Callable[[str, str], None], Callable[[str], CPUSet | None]]


def _fake() -> Harness:
    host = DryRunHost(build_topology(DUAL_SOCKET_HT))

    def start(cid: str, cpus: str) -> None:
        host.start_unmanaged(ContainerFacts(id=cid, sandbox_id="s", name=cid, cpus=cpus))

    def read(cid: str) -> CPUSet | None:
        return host.containers[cid].cpus

    return host, start, read


HARNESSES = {"fake": _fake}


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]()


def _update(cid: str, cpus: str, previous: str) -> ContainerUpdate:
    return ContainerUpdate(container_id=cid, subject=f"ns/pod/{cid}", kind=Kind.SHARED,
                           cpus=CPUSet.parse(cpus), previous_cpus=CPUSet.parse(previous))


def test_an_empty_batch_succeeds(harness: Harness) -> None:
    updater, _, _ = harness
    assert updater.apply([]).ok


def test_every_update_of_a_batch_is_applied(harness: Harness) -> None:
    updater, start, read = harness
    start("a", "0-15")
    start("b", "0-15")
    outcome = updater.apply([_update("a", "2-3", "0-15"), _update("b", "4-7", "0-15")])
    assert outcome.ok
    assert outcome.failed == ()
    assert read("a") == CPUSet.parse("2-3")
    assert read("b") == CPUSet.parse("4-7")


def test_an_unknown_container_counts_as_applied(harness: Harness) -> None:
    updater, _, _ = harness
    assert updater.apply([_update("gone", "1", "0-15")]).ok


def test_memory_nodes_are_applied_when_given(harness: Harness) -> None:
    updater, start, _ = harness
    start("a", "0-15")
    update = ContainerUpdate(container_id="a", subject="ns/pod/a", kind=Kind.ANNOTATED,
                             cpus=CPUSet.parse("0-1"), previous_cpus=CPUSet.parse("0-15"),
                             mems=CPUSet.parse("0"), previous_mems=CPUSet.parse("0-1"))
    assert updater.apply([update]).ok
