"""A fake quiet-CPU node and a service over it, for the quiet-CPU tests of several rooms."""

from __future__ import annotations

from dataclasses import dataclass, field

from cpuset_adapters.quiet.applier import QuietReport
from cpuset_core import CPUSet, CpusetEngine, Quiet, QuietState, Settings, Unmet
from cpuset_core.quiet_request import CRIO_IDLE, CRIO_IRQ
from cpuset_service.placement import PlacementService
from tests.unit.core.topologies import DUAL_SOCKET

QUIET = {CRIO_IRQ: "disable", CRIO_IDLE: "max_latency:10"}


@dataclass
class FakeNode:
    why: list[str] = field(default_factory=list)
    states: list[QuietState] = field(default_factory=list)
    fail: bool = False

    def unmet(self, quiet: Quiet, cpus: CPUSet) -> list[str]:
        return list(self.why)

    def apply(self, state: QuietState, online: CPUSet) -> QuietReport:
        if self.fail:
            raise OSError("the journal's disk is full")
        self.states.append(state)
        return QuietReport(changed=["x"])


def service(node: FakeNode, unmet: Unmet = Unmet.BEST_EFFORT) -> PlacementService:
    placed = PlacementService(CpusetEngine(DUAL_SOCKET, Settings(unmet_requests=unmet)))
    placed.quiet.node = node
    return placed
