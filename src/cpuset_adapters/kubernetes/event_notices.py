"""The service's decisions about pods (its :class:`~cpuset_service.notices.Notices` port) turned
into Kubernetes Events and queued on the recorder: never sent from here, never raising.

The service names containers by id; an Event names the pod (namespace, name, uid) and the
container. Who is who is learnt from the same calls, at each creation and each rebuild from the
runtime, and forgotten when the ledger no longer holds the container.

A defect while composing an event (it is built on the hook's path: a few set operations) must
not cost a placement: it is caught, logged once, and counted (:attr:`EventNotices.failures`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from cpuset_adapters.kubernetes.event_object import PlacementEvent, Regarding, container
from cpuset_adapters.kubernetes.placement_events import (
    cpus_resized,
    drift_repaired,
    exclusive_assigned,
    moved_for_pin,
    pinned_assigned,
    quiet_repaired,
    released_never_started,
    resize_refused,
)
from cpuset_core import AdmissionError, ContainerFacts, CPUSet, Kind, Plan, PodFacts, Topology
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.verify import Mismatch

_log = logging.getLogger("nri_cpuset.events")


class Recorder(Protocol):
    """Where events are queued (``EventRecorder``); must not block."""

    def record(self, event: PlacementEvent) -> None: ...


@dataclass(frozen=True, slots=True)
class _Pod:
    namespace: str
    name: str
    uid: str


class EventNotices:
    """Tells ``recorder`` of exclusive and pinned placements, moves off a new pin, resizes
    applied or refused, repaired drift, and CPUs given back by containers that never ran.
    Shared containers get none of their own: the shared pool's changes are one event on the
    node (``cpuset_cli.daemon.events``)."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._pods: dict[str, _Pod] = {}  # sandbox id -> the pod
        self._containers: dict[str, tuple[str, str]] = {}  # id -> (sandbox id, name)
        self._failed: set[str] = set()
        self.failures = 0
        """Events that could not be composed (a defect; logged once per notice)."""

    # -- the Notices port --

    def admitted(self, pod: PodFacts, container: ContainerFacts, plan: Plan,
                 topology: Topology) -> None:
        self._safely("admitted", lambda: self._admitted(pod, container, plan, topology))

    def resized(self, container_id: str, plan: Plan, topology: Topology) -> None:
        def tell() -> None:
            before = _exclusive(plan.base, container_id)
            after = _exclusive(plan.result, container_id)
            who = self._regarding(container_id)
            if who is not None and before != after:
                self._recorder.record(cpus_resized(who, before=before, after=after,
                                                   topology=topology))
        self._safely("resized", tell)

    def resize_refused(self, container_id: str, error: AdmissionError) -> None:
        def tell() -> None:
            if (who := self._regarding(container_id)) is not None:
                self._recorder.record(resize_refused(who, detail=error.detail))
        self._safely("resize_refused", tell)

    def synchronized(self, pods: Sequence[PodFacts], containers: Sequence[ContainerFacts],
                     ledger: Ledger) -> None:
        def learn() -> None:
            # Added to, not replaced: a lagging report (the CRI inventory) may miss containers
            # created since, which the ledger keeps.
            self._pods.update((p.sandbox_id, _Pod(p.namespace, p.name, p.uid)) for p in pods)
            self._containers.update((c.id, (c.sandbox_id, c.name)) for c in containers)
            self._forget_gone(ledger)
        self._safely("synchronized", learn)

    def drift_repaired(self, repaired: Sequence[Mismatch]) -> None:
        def tell() -> None:
            for mismatch in repaired:
                if (who := self._regarding(mismatch.container_id)) is not None:
                    self._recorder.record(drift_repaired(who, mismatch))
        self._safely("drift_repaired", tell)

    def gave_back(self, container_id: str, entry: Entry, why: str) -> None:
        def tell() -> None:
            if (who := self._regarding(container_id)) is not None:
                self._recorder.record(released_never_started(
                    who, kind=entry.label, cpus=entry.cpus, why=why))
        self._safely("gave_back", tell)

    def quiet_repaired(self, holders: Mapping[str, CPUSet], what: str,
                       repaired: Sequence[str]) -> None:
        def tell() -> None:
            for container_id, cpus in holders.items():
                if repaired and (who := self._regarding(container_id)) is not None:
                    self._recorder.record(quiet_repaired(
                        who, what=what, cpus=cpus, repaired=len(repaired),
                        example=repaired[0]))
        self._safely("quiet_repaired", tell)

    # -- composing --

    def _admitted(self, pod: PodFacts, facts: ContainerFacts, plan: Plan,
                  topology: Topology) -> None:
        self._pods[pod.sandbox_id] = _Pod(pod.namespace, pod.name, pod.uid)
        self._containers[facts.id] = (pod.sandbox_id, facts.name)
        self._forget_gone(plan.result)
        entry, placement = plan.result.entries.get(facts.id), plan.placement
        who = self._regarding(facts.id)
        if entry is None or placement is None or who is None:
            return
        if entry.kind is Kind.INTEGER:
            self._recorder.record(exclusive_assigned(who, cpus=entry.cpus, mems=placement.mems,
                                                     topology=topology))
        elif entry.kind is Kind.ANNOTATED:
            self._recorder.record(pinned_assigned(
                who, cpus=entry.cpus, mems=placement.mems,
                sharing_pods=_pods_pinning(plan.result, entry)))
        for move in plan.moves:
            moved = self._regarding(move.container_id)
            if moved is not None:
                self._recorder.record(moved_for_pin(
                    moved, previous=move.previous_cpus, cpus=move.cpus,
                    pinned_by=f"{pod.namespace}/{pod.name}", pinned=entry.cpus))

    def _regarding(self, container_id: str) -> Regarding | None:
        """The container as an Event refers to it; ``None`` when it is not known (nothing
        is told rather than a wrong pod)."""
        found = self._containers.get(container_id)
        pod = None if found is None else self._pods.get(found[0])
        if found is None or pod is None:
            return None
        return container(namespace=pod.namespace, pod=pod.name, pod_uid=pod.uid,
                         name=found[1])

    def _forget_gone(self, ledger: Ledger) -> None:
        # Pruned when twice what the ledger holds: amortised, so a creation stays O(1).
        if len(self._containers) <= 2 * len(ledger.entries) + 16:
            return
        self._containers = {cid: held for cid, held in self._containers.items()
                            if cid in ledger.entries}
        sandboxes = {sandbox for sandbox, _ in self._containers.values()}
        self._pods = {sid: pod for sid, pod in self._pods.items() if sid in sandboxes}

    def _safely(self, notice: str, tell: Callable[[], None]) -> None:
        try:
            tell()
        except Exception:  # noqa: BLE001 - an event is never worth a placement
            self.failures += 1
            if notice not in self._failed:
                self._failed.add(notice)
                _log.exception("event not composed (%s); placements are not affected",
                               notice)


def _exclusive(ledger: Ledger, container_id: str) -> CPUSet:
    """The container's own CPUs in ``ledger`` when it is an integer one, else none."""
    entry = ledger.entries.get(container_id)
    return entry.cpus if entry is not None and entry.kind is Kind.INTEGER else CPUSet()


def _pods_pinning(ledger: Ledger, pinned: Entry) -> int:
    """How many pods other than ``pinned``'s pin any of its CPUs."""
    return len({entry.sandbox_id for entry in ledger.entries.values()
                if entry.kind is Kind.ANNOTATED and entry.sandbox_id != pinned.sandbox_id
                and not entry.cpus.isdisjoint(pinned.cpus)})
