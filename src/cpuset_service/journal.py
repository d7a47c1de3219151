"""The decision journal: what the service records of each decision about a container, as a line
of its history (``explain``) and as a decision event (the log, :mod:`cpuset_service.events`).

Both are written here, from the same plan, so that ``explain`` and the log never tell a
container's story two ways. Two events tell of the service's handling rather than of one
container's placement and go to ``nri_cpuset.placement``: a resize that leaves nothing to set,
and a pod's release (naming the containers it released).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from cpuset_core import AdmissionError, ContainerUpdate, Kind, Placement, Plan
from cpuset_service.events import decision, short_id, updated
from cpuset_service.events import log as _decisions
from cpuset_service.history import History

_log = logging.getLogger("nri_cpuset.placement")


class DecisionJournal:
    """The containers' history and the decision events, one method per decision."""

    def __init__(self) -> None:
        self.history = History()

    def rejected(self, event: str, error: AdmissionError, container_id: str,
                 kind: Kind | None) -> None:
        """The container was not admitted (``reject``) or not resized (``reject resize``)."""
        decision(logging.WARNING, event, container=error.subject, container_id=container_id,
                 kind=kind, cpus=None, mems=None, reason=error.reason, detail=error.detail)

    def admitted(self, subject: str, container_id: str, plan: Plan, placement: Placement,
                 updates: int, *, quota: int | None = None) -> None:
        """The container was created where ``plan`` places it, moving ``plan.moves``; its
        answer carries ``updates`` updates of other containers, and its own CFS ``quota``
        (``None``: the kubelet's)."""
        self.history.restart(container_id, f"created: {placement.kind.value} "
                                           f"cpus={placement.cpus} mems="
                                           f"{placement.mems or 'default'}{_lifted(quota)} "
                                           f"({plan.reason})")
        for move in plan.moves:
            self.history.remember(move.container_id,
                                  f"moved {move.previous_cpus} -> {move.cpus}: {move.reason}")
            decision(logging.INFO, "move", container=move.subject,
                     container_id=move.container_id, kind=move.kind, cpus=move.cpus,
                     mems=move.mems, reason=move.reason, previous=str(move.previous_cpus))
        decision(logging.INFO, "admit", container=subject, container_id=container_id,
                 kind=placement.kind, cpus=placement.cpus, mems=placement.mems,
                 reason=plan.reason, updates=updates, **_quota_field(quota))

    def resized(self, subject: str, container_id: str, plan: Plan, placement: Placement,
                updates: int, *, quota: int | None = None) -> None:
        self.history.remember(container_id, f"resized: {placement.kind.value} cpus="
                                            f"{placement.cpus}{_lifted(quota)} ({plan.reason})")
        decision(logging.INFO, "resize", container=subject, container_id=container_id,
                 kind=placement.kind, cpus=placement.cpus, mems=placement.mems,
                 reason=plan.reason, updates=updates, **_quota_field(quota))

    def resize_without_cpus(self, subject: str, container_id: str) -> None:
        _log.warning("resize without CPUs", extra={
            "container": subject, "id": short_id(container_id), "reason": "empty shared pool"})

    def released(self, subject: str, container_id: str, released: Placement, plan: Plan,
                 why: str) -> None:
        """The container, which ran on ``released``, was released on ``why`` (stop, remove)."""
        decision(logging.INFO, "release", container=subject, container_id=container_id,
                 kind=released.kind, cpus=released.cpus, mems=released.mems, reason=why,
                 shared_pool=str(plan.shared_pool), updates=len(plan.updates))

    def pod_released(self, subject: str, plan: Plan, gone: Iterable[str], *,
                     removed: bool) -> None:
        """The pod stopped or was removed (``removed``), and ``plan`` released its containers
        ``gone``."""
        _log.info("release pod", extra={
            "pod": subject, "on": "removal" if removed else "stop",
            "containers": ", ".join(short_id(cid) for cid in gone),
            "shared_pool": str(plan.shared_pool)})

    def answered(self, updates: Iterable[ContainerUpdate]) -> None:
        """``updates`` ride on a runtime's answer: one event each, at debug (a move among them
        was told as a move already)."""
        if not _decisions.isEnabledFor(logging.DEBUG):
            return  # one check, not one per container (500 per integer creation)
        for update in updates:
            updated(update)

    def synchronized(self, plan: Plan, source: str) -> None:
        """A rebuild from ``source``'s report committed ``plan``: the containers it dropped are
        forgotten, those it found for the first time and those it corrected remembered."""
        self.history.keep_only(plan.result.entries)
        for cid, entry in plan.result.entries.items():
            if cid not in self.history:
                self.history.remember(cid, f"found at {source}: {entry.kind.value} "
                                           f"({entry.reason})")
        for change in plan.moves:
            self.history.remember(change.container_id, f"corrected at {source}: "
                                                       f"{change.previous_cpus} -> {change.cpus}")

    def topology_changed(self, plan: Plan) -> None:
        """CPUs went on- or offline and ``plan`` re-placed the containers it moves."""
        for change in plan.moves:
            self.history.remember(change.container_id, f"moved at topology change: "
                                                       f"{change.previous_cpus} -> {change.cpus}")


def _lifted(quota: int | None) -> str:
    """What ``explain`` says of a container's own CFS quota: only that it was lifted."""
    return "" if quota is None else " cfs_quota=unlimited"


def _quota_field(quota: int | None) -> dict[str, object]:
    return {} if quota is None else {"cfs_quota": "unlimited"}
