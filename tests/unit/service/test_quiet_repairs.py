"""The quiet loop's checks (issue 43): while some CPU is quiet, a pass every CHECK seconds with
the wanted state unchanged; what it rewrites is a repair, counted by what it was, logged, and
told to the containers holding those CPUs quiet; a check that finds all as written says
nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from cpuset_adapters.quiet.applier import QuietReport
from cpuset_cli.daemon.quiet_loop import QuietLoop
from cpuset_cli.daemon.quiet_repairs import holders, what_of
from cpuset_core import CPUSet, CpusetEngine, Quiet, QuietState, Settings
from cpuset_core.quiet import CpuQuiet
from cpuset_core.quiet_request import CRIO_IDLE, CRIO_IRQ
from cpuset_service.placement import PlacementService
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET

QUIET = {CRIO_IRQ: "disable", CRIO_IDLE: "max_latency:10"}


@dataclass
class MovedBack:
    """A node where, after the first pass, the passes given in ``later`` find things moved."""

    later: list[list[str]] = field(default_factory=list)
    passes: int = 0

    def unmet(self, quiet: Quiet, cpus: CPUSet) -> list[str]:
        return []

    def apply(self, state: QuietState, online: CPUSet) -> QuietReport:
        self.passes += 1
        if self.passes == 1:
            return QuietReport(changed=["/proc/irq/24/smp_affinity_list"])
        return QuietReport(changed=self.later.pop(0) if self.later else [])


@dataclass
class Told:
    calls: list[tuple[dict[str, CPUSet], str, list[str]]] = field(default_factory=list)

    def quiet_repaired(self, holders: Mapping[str, CPUSet], what: str,
                       repaired: Sequence[str]) -> None:
        self.calls.append((dict(holders), what, list(repaired)))

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *_args, **_kwargs: None  # the port's other notices: not under test


def run(loop: QuietLoop, done: Callable[[], bool]) -> None:
    async def main() -> None:
        task = asyncio.create_task(loop.run())
        try:
            async with asyncio.timeout(30):  # a hang guard, not a verdict
                while not done():
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()

    asyncio.run(main())


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cpuset_cli.daemon.quiet_loop.CHECK", 0.0)


def quiet_service(node: MovedBack) -> tuple[PlacementService, Told]:
    placed = PlacementService(CpusetEngine(DUAL_SOCKET, Settings()))
    placed.quiet.node = node
    told = Told()
    placed.notices = told  # type: ignore[assignment]
    p = pod("dpdk", annotations=QUIET)
    placed.admit(p, container("c", p, cpu_limit=2))
    placed.synchronize([p], [container("c", p, cpu_limit=2, cpus_now="6,14")], source="test")
    return placed, told


def test_an_irq_moved_back_is_rewritten_counted_and_told_to_its_holder(
        caplog: pytest.LogCaptureFixture) -> None:
    node = MovedBack(later=[[], ["/proc/irq/25/smp_affinity_list"]])
    placed, told = quiet_service(node)
    counted: list[tuple[str, int]] = []
    loop = QuietLoop(placed, repairs=lambda what, n: counted.append((what, n)))
    run(loop, lambda: loop.repaired >= 1)
    assert counted == [("irq", 1)]
    assert told.calls == [({"c": CPUSet([6, 14])}, "irq", ["/proc/irq/25/smp_affinity_list"])]
    assert any(r.getMessage() == "quiet CPUs repaired" and r.what == "irq"  # type: ignore[attr-defined]
               for r in caplog.records)


def test_a_check_that_finds_all_as_written_counts_nothing() -> None:
    node = MovedBack()
    placed, told = quiet_service(node)
    files: list[tuple[str, int]] = []
    loop = QuietLoop(placed, lambda outcome, n: files.append((outcome, n)))
    run(loop, lambda: node.passes >= 5)
    assert loop.repaired == 0
    assert told.calls == []
    assert files == [("changed", 1), ("restored", 0), ("skipped", 0), ("failed", 0)]


def test_no_checks_while_no_cpu_is_quiet() -> None:
    node = MovedBack()
    placed = PlacementService(CpusetEngine(DUAL_SOCKET, Settings()))
    placed.quiet.node = node
    placed.synchronize([], [], source="test")
    loop = QuietLoop(placed)
    run(loop, lambda: loop.passes >= 1)
    run(loop, lambda: True)
    assert node.passes == 1


def test_each_entry_is_told_as_what_it_is() -> None:
    assert [what_of(e) for e in (
        "/proc/irq/24/smp_affinity_list", "/proc/irq/default_smp_affinity",
        "/sys/devices/system/cpu/cpu3/cpuidle/state2/disable",
        "/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor",
        "/sys/devices/system/cpu/cpu3/power/pm_qos_resume_latency_us",
        "irqbalance 812: settings cpus 3")] == ["irq", "irq", "idle", "governor", "idle",
                                                "irqbalance"]


def test_the_holders_are_those_that_asked_for_that_kind_each_once_with_their_cpus() -> None:
    state = QuietState({1: CpuQuiet(irqs=("a", "b"), idle=("b",), idle_limit=10),
                        2: CpuQuiet(irqs=("a",))})
    assert holders(state, "irq") == {"a": CPUSet([1, 2]), "b": CPUSet([1])}
    assert holders(state, "irqbalance") == {"a": CPUSet([1, 2]), "b": CPUSet([1])}
    assert holders(state, "idle") == {"b": CPUSet([1])}
    assert holders(state, "governor") == {}
