"""Quiet CPUs as the service's use case (issue 43): an unmet request refused or let through with
its reason, and the node's state asked for only when what must be quiet changed, through a fake
node (the port)."""

from __future__ import annotations

import asyncio

import pytest

from cpuset_cli.daemon.quiet_loop import QuietLoop
from cpuset_core import CPUSet, QuietState, Unmet
from cpuset_core.quiet_request import CRIO_IDLE, CRIO_IRQ
from cpuset_service.placement import PlacementService
from cpuset_service.quiet import QuietCpusUnavailableError
from tests.builders.facts import container, pod
from tests.unit.service.quiet_fakes import QUIET, FakeNode, service


def test_a_request_the_node_cannot_meet_is_refused_under_refuse() -> None:
    placed = service(FakeNode(why=["interrupts: /proc/irq is read-only here"]), Unmet.REFUSE)
    p = pod("dpdk", annotations=QUIET)
    with pytest.raises(QuietCpusUnavailableError) as caught:
        placed.admit(p, container("c", p, cpu_limit=2))
    assert str(caught.value) == (
        f"ns/dpdk/main: asks for quiet CPUs ({CRIO_IRQ}, {CRIO_IDLE}), which this node cannot "
        f"give: interrupts: /proc/irq is read-only here")
    assert caught.value.reason == "quiet-cpus-unavailable"
    assert "c" not in placed.ledger


def test_best_effort_admits_it_and_its_reason_says_why() -> None:
    placed = service(FakeNode(why=["idle states: no cpuidle states for CPU(s) 6"]))
    p = pod("dpdk", annotations=QUIET)
    placed.admit(p, container("c", p, cpu_limit=2))
    assert "quiet CPUs not given (best effort): idle states: no cpuidle" in (
        placed.history()["c"][0])


def test_a_request_the_node_can_meet_and_a_pod_asking_nothing_pass_unchanged() -> None:
    placed = service(FakeNode(why=["never asked"]), Unmet.REFUSE)
    plain = pod("web")
    placed.admit(plain, container("w", plain, cpu_limit=2))
    placed.quiet.node = FakeNode()
    p = pod("dpdk", annotations=QUIET)
    placed.admit(p, container("c", p, cpu_limit=2))
    assert "not given" not in placed.history()["c"][0]


def test_the_state_is_asked_for_only_when_it_changes() -> None:
    node = FakeNode()
    placed = service(node)
    p = pod("dpdk", annotations=QUIET)
    placed.admit(p, container("c", p, cpu_limit=2))
    state = placed.quiet.wanted(placed.ledger)
    assert state is not None
    assert len(state.irq_cpus) == 2
    placed.quiet.apply(state, placed.engine.topology.online)
    other = pod("web")
    placed.admit(other, container("w", other, cpu_limit=1))
    assert placed.quiet.wanted(placed.ledger) is None  # web asked nothing
    placed.remove("c", "ns/dpdk/main")
    assert placed.quiet.wanted(placed.ledger) == QuietState()


def run_loop_until(placed: PlacementService, done: object) -> QuietLoop:
    """Run the daemon's loop until ``done()`` holds (a generous deadline guards a hang)."""
    loop = QuietLoop(placed)

    async def main() -> None:
        task = asyncio.create_task(loop.run())
        try:
            async with asyncio.timeout(30):
                while not done():  # type: ignore[operator]
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()

    asyncio.run(main())
    return loop


def test_the_loop_waits_for_the_first_rebuild_then_follows_the_ledger() -> None:
    node = FakeNode()
    placed = service(node)
    p = pod("dpdk", annotations=QUIET)
    live = container("c", p, cpu_limit=2, cpus_now="6,14")
    placed.admit(p, container("c", p, cpu_limit=2))
    # Not synchronized yet: a restart must not put back what a running pod still needs.
    run_loop_until(placed, lambda: True)
    assert node.states == []
    placed.synchronize([p], [live], source="test")
    run_loop_until(placed, lambda: len(node.states) == 1)
    assert node.states[0].irq_cpus == CPUSet((6, 14))


def test_a_failed_pass_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cpuset_cli.daemon.quiet_loop.RETRY", 0.0)
    node = FakeNode(fail=True)
    placed = service(node)
    placed.synchronize([], [], source="test")
    loop = QuietLoop(placed)

    async def main() -> None:
        task = asyncio.create_task(loop.run())
        try:
            async with asyncio.timeout(30):
                while loop.failures < 2:
                    await asyncio.sleep(0.01)
                node.fail = False
                while loop.passes < 1:
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()

    asyncio.run(main())
    assert node.states == [QuietState()]


def test_the_loop_counts_each_passs_files_by_outcome() -> None:
    node = FakeNode()
    placed = service(node)
    counted: list[tuple[str, int]] = []
    placed.synchronize([], [], source="test")
    loop = QuietLoop(placed, lambda outcome, files: counted.append((outcome, files)))

    async def main() -> None:
        task = asyncio.create_task(loop.run())
        try:
            async with asyncio.timeout(30):
                while loop.passes < 1:
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()

    asyncio.run(main())
    assert counted == [("changed", 1), ("restored", 0), ("skipped", 0), ("failed", 0)]
