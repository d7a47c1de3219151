"""What a rebuild (synchronize, CRI inventory, topology change) logs: that it happened, the
containers it found off their placement, what it could not place as asked, and any invariant the
result breaks."""

from __future__ import annotations

import logging

from cpuset_core import CPUSet, CpusetEngine, Plan, violations
from cpuset_core.drift import DriftReport
from cpuset_service.events import short_id

_log = logging.getLogger("nri_cpuset.placement")


def drift(report: DriftReport, source: str) -> None:
    """One event per container found off its placement: repaired (info) or not (warning)."""
    for drifted in report.unrepaired:
        _log.warning("drift unrepaired", extra={
            "container": drifted.subject, "id": short_id(drifted.container_id),
            "reported": drifted.reported or "unset",
            "expected": str(drifted.expected) if drifted.expected else "none",
            "source": source, "reason": drifted.why})
    for drifted in report.repaired:
        _log.info("drift repaired", extra={
            "container": drifted.subject, "id": short_id(drifted.container_id),
            "reported": drifted.reported or "unset", "expected": str(drifted.expected),
            "source": source})


def synchronized(plan: Plan, source: str, *, pods: int, containers: int) -> None:
    """A report of ``pods`` and ``containers`` rebuilt the ledger into ``plan``."""
    _log.info("synchronized", extra={
        "source": source, "pods": pods, "containers": containers,
        "corrections": len(plan.updates), "shared_pool": str(plan.shared_pool)})


def topology_changed(plan: Plan, before: CPUSet, after: CPUSet) -> None:
    """The online CPUs went from ``before`` to ``after`` and ``plan`` re-placed the containers."""
    _log.warning("online CPUs changed", extra={
        "before": str(before), "after": str(after), "updates": len(plan.updates),
        "shared_pool": str(plan.shared_pool)})


def problems(plan: Plan, engine: CpusetEngine, source: str) -> None:
    """What ``plan`` could not place as asked, and what the committed ledger breaks."""
    for problem in plan.problems:
        _log.warning("not placed as asked", extra={
            "source": source, "problem": str(problem), "reason": problem.reason})
    for broken in violations(engine.topology, engine.ledger, engine.settings):
        _log.error("invariant broken", extra={"source": source, "invariant": str(broken)})
