"""Containers placed but not seen to start, and those given up because they will not run.

A container is *waiting* from its admission (or from a rebuild that found it created, not
running) until the runtime says it starts (NRI StartContainer) or a probe shows it running.
What becomes of a waiting container is the core's rule (:mod:`cpuset_core.starts`), applied to
what a :class:`StartProbe` reads; one the rule gives up is remembered, so that its start, should
it come after all, is refused rather than placed over whoever took its CPUs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import Protocol, TypeVar

from cpuset_core import (
    FullCoresUnavailableError,
    InsufficientCpusError,
    InsufficientCpusForReassignmentError,
    Ledger,
    SharedPoolBelowMinimumError,
    SharedPoolExhaustedError,
    StartOutcome,
    StartReport,
    StartTooLateError,
    judge_start,
)
from cpuset_service.events import short_id
from cpuset_service.journal import DecisionJournal
from cpuset_service.notices import Notices
from cpuset_service.observer import Observer

_log = logging.getLogger("nri_cpuset.placement")

DEFAULT_GRACE = 120.0
"""Seconds a created container keeps its CPUs before it starts: the kubelet's default
``runtimeRequestTimeout`` (2 min), after which it has given up on its StartContainer call."""


class StartProbe(Protocol):
    """Reads what the runtime and the kernel say of containers not seen to start."""

    def reports(self, cgroup_paths: Mapping[str, str]) -> Mapping[str, StartReport]:
        """One report per container id of ``cgroup_paths`` (id → its cgroup path, ``""`` when
        unknown). Blocking I/O within the probe's own deadline; raises when it cannot tell
        (the runtime does not answer): nothing is then given back."""
        ...


class StartTracker:
    """Which containers wait for their start, and which were given up (with why)."""

    def __init__(self) -> None:
        self._waiting: set[str] = set()
        self._given_up: dict[str, str] = {}

    @property
    def waiting(self) -> frozenset[str]:
        return frozenset(self._waiting)

    def placed(self, container_id: str) -> None:
        """The container was admitted at its creation: it waits for its start."""
        self._waiting.add(container_id)
        self._given_up.pop(container_id, None)

    def started(self, container_id: str) -> str | None:
        """The container starts (or runs): it waits no more. Returns why it was given up, if
        it was (its start comes too late to be placed)."""
        self._waiting.discard(container_id)
        return self._given_up.get(container_id)

    def gave_up(self, container_id: str, why: str) -> None:
        """The rule gave the container up: its CPUs went back."""
        self._waiting.discard(container_id)
        self._given_up[container_id] = why

    def stopped(self, container_id: str) -> None:
        """The container stopped: it waits no more (it was not given up)."""
        self._waiting.discard(container_id)

    def adopted(self, listed: Collection[str], unstarted: Collection[str],
                live: Collection[str]) -> None:
        """A rebuild from the runtime's report of ``listed`` containers, of which ``unstarted``
        were created and not running, left ``live`` in the ledger. Those wait; containers it
        did not list keep waiting if still live (a report that lags the runtime's events);
        given-up containers it no longer lists are gone (removed, or exited: the report leaves
        those out)."""
        listed = set(listed)
        self._waiting = ((self._waiting - listed) | set(unstarted)) & set(live)
        self._given_up = {cid: why for cid, why in self._given_up.items() if cid in listed}

    def forget(self, container_id: str) -> None:
        """The container is gone."""
        self._waiting.discard(container_id)
        self._given_up.pop(container_id, None)


ROOM_ERRORS = (InsufficientCpusError, InsufficientCpusForReassignmentError,
               FullCoresUnavailableError, SharedPoolExhaustedError, SharedPoolBelowMinimumError)
"""Refusals for want of room: a container that will not run may be what holds it."""

_T = TypeVar("_T")


class _Placements(Protocol):
    """What the start use cases need of the placement service."""

    @property
    def ledger(self) -> Ledger: ...

    def cgroup_path(self, container_id: str) -> str | None: ...

    def remove(self, container_id: str, subject: str, why: str = ...) -> None: ...

    @property
    def notices(self) -> Notices: ...


class StartCases:
    """The use cases about starts: a start (refused when it comes too late), what a probe
    read of waiting containers, and making room before a refusal."""

    def __init__(self, service: _Placements, journal: DecisionJournal,
                 observer: Observer) -> None:
        self._service = service
        self._journal = journal
        self._observer = observer
        self._tracker = StartTracker()
        self.probe: StartProbe | None = None
        """Asked before a refusal for room (``None``: nothing is asked there)."""
        self.grace = DEFAULT_GRACE
        """Seconds a created container keeps its CPUs before it starts."""

    # -- what the runtime's events say (delegated to the tracker) --

    def placed(self, container_id: str) -> None:
        self._tracker.placed(container_id)

    def stopped(self, container_id: str) -> None:
        self._tracker.stopped(container_id)

    def forget(self, container_id: str) -> None:
        self._tracker.forget(container_id)

    def adopted(self, listed: Collection[str], unstarted: Collection[str],
                live: Collection[str]) -> None:
        self._tracker.adopted(listed, unstarted, live)

    def started(self, container_id: str, subject: str) -> None:
        """The runtime starts the container (its task exists now). Raises
        :class:`StartTooLateError` (logged) when its CPUs were given back because it had not
        started in time: placed now, it could overlap whoever took them."""
        why = self._tracker.started(container_id)
        if why is None:
            return
        error = StartTooLateError(subject, why)
        self._journal.rejected("reject start", error, container_id, None)
        raise error

    def unstarted(self) -> frozenset[str]:
        """Containers placed and not seen to start (ids only: asked often, while records
        wait for their pace)."""
        return self._tracker.waiting

    # -- what a probe read --

    def waiting(self) -> dict[str, str]:
        """Containers placed and not seen to start, with their cgroup paths (``""``: not
        said): what a :class:`StartProbe` reads."""
        entries = self._service.ledger.entries
        return {cid: self._service.cgroup_path(cid) or "" for cid in sorted(self._tracker.waiting)
                if cid in entries}

    def reported(self, reports: Mapping[str, StartReport]) -> list[str]:
        """Apply the start rule (``cpuset_core.starts``) to what a probe read of waiting
        containers: one that runs waits no more; one that will not run gives back what it
        holds, released like a removal (the pool's growth goes out in the background), and
        its start, should it come, is refused. Containers that started or went while the
        probe read are left alone. Returns the ids released."""
        released = []
        for cid, report in sorted(reports.items()):
            entry = self._service.ledger.get(cid)
            if cid not in self._tracker.waiting or entry is None:
                continue
            verdict = judge_start(report, grace=self.grace)
            _log.debug("start checked", extra={
                "container": entry.subject, "id": short_id(cid),
                "state": report.state.value if report.state else "unlisted",
                "age_s": round(report.age, 1), "tasks": report.has_tasks,
                "outcome": verdict.outcome.value})
            if verdict.outcome is StartOutcome.RUNNING:
                self._tracker.started(cid)
            elif verdict.outcome is StartOutcome.HOLDS_NOTHING:
                self._service.notices.gave_back(cid, entry, verdict.why)
                self._service.remove(cid, entry.subject, f"not running: {verdict.why}")
                self._tracker.gave_up(cid, verdict.why)
                self._observer.not_running(entry.kind, verdict.reason)
                released.append(cid)
        return released

    # -- before a refusal --

    def planned(self, make: Callable[[], _T]) -> _T:
        """``make()``'s plan; when it is refused for want of room, once more after giving back
        what containers that will not run hold (:meth:`reclaim`), if any did."""
        try:
            return make()
        except ROOM_ERRORS:
            if not self.reclaim():
                raise
        return make()

    def reclaim(self) -> bool:
        """Ask the probe about every waiting container and release those that will not run;
        return whether any was. Shared ones too: a shared container keeps the pool from
        emptying (the planner's floor), so a dead one can cause a refusal for room as surely
        as a dead integer container or pin. Synchronous: it runs on a refusal's path only."""
        waiting = self.waiting()
        if self.probe is None or not waiting:
            return False
        try:
            reports = self.probe.reports(waiting)
        except Exception as exc:  # noqa: BLE001 - the runtime cannot tell: refuse as before
            _log.warning("start check failed", extra={"error": str(exc)})
            self._observer.start_check_failed()
            return False
        return bool(self.reported(reports))
