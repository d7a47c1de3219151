"""Counters since start, for ``inspect``: one object, fed through the :class:`Observer` port and
read from any thread.

A lock guards every change and every read: the status socket and the metrics scrape read from
other threads while the event loop counts, and a copy taken under the lock is consistent.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Sequence

from cpuset_core import Kind
from cpuset_service.observer import AdmissionResult, BatchOutcome
from cpuset_service.verification import Verdict

VERIFY_KEYS = ("verify_passes", "verify_drift_found", "verify_drift_repaired",
               "verify_drift_unrepairable", "verify_drifting")
"""The verifier's counters, as ``inspect`` shows them (``verify_drifting``: at the last pass)."""


class Statistics:
    """Update and drift counters; implements :class:`~cpuset_service.observer.Observer`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._on_responses: Counter[str] = Counter()
        self._in_background: Counter[str] = Counter()
        self._batches_sent = 0
        self._updates_sent = 0
        self._failures = 0
        self._drift_repaired = 0
        self._drift_unrepaired = 0
        self._verified: Counter[str] = Counter()
        self._not_running = 0
        self._start_checks_failed = 0

    # -- Observer --

    def admission(self, kind: Kind, result: AdmissionResult, reason: str) -> None:
        pass

    def response_updates(self, container_ids: Sequence[str], moves: int) -> None:  # noqa: ARG002
        with self._lock:
            self._on_responses.update(container_ids)

    def update_batch(self, outcome: BatchOutcome, container_ids: Sequence[str]) -> None:
        with self._lock:
            if outcome == "applied":
                self._batches_sent += 1
                self._updates_sent += len(container_ids)
                self._in_background.update(container_ids)
            elif outcome == "failed":
                self._failures += 1

    def drift(self, repaired: int, unrepaired: int) -> None:
        with self._lock:
            self._drift_repaired += repaired
            self._drift_unrepaired += unrepaired

    def verified(self, verdict: Verdict) -> None:
        with self._lock:
            self._verified["verify_passes"] += 1
            self._verified["verify_drift_found"] += len(verdict.found)
            self._verified["verify_drift_repaired"] += len(verdict.repaired)
            self._verified["verify_drift_unrepairable"] += len(verdict.unrepairable)
            self._verified["verify_drifting"] = len(verdict.drifting)

    def not_running(self, kind: Kind, reason: str) -> None:  # noqa: ARG002
        with self._lock:
            self._not_running += 1

    def start_check_failed(self) -> None:
        with self._lock:
            self._start_checks_failed += 1

    # -- the service's own --

    def forget(self, container_ids: Iterable[str]) -> None:
        """These containers are gone: their per-container counts go too (bounded memory)."""
        with self._lock:
            for cid in container_ids:
                self._on_responses.pop(cid, None)
                self._in_background.pop(cid, None)

    def updates_on_responses(self, container_id: str) -> int:
        """Updates of this container carried on event responses since it was created."""
        with self._lock:
            return self._on_responses[container_id]

    def drift_counts(self) -> tuple[int, int]:
        """Containers rebuilds found off their placement: (repaired, unrepaired)."""
        with self._lock:
            return self._drift_repaired, self._drift_unrepaired

    def snapshot(self) -> dict[str, int]:
        """Every counter, by the names ``inspect`` shows (docs/cli.md)."""
        with self._lock:
            per_container = self._on_responses + self._in_background
            return {"update_containers_calls": self._batches_sent,
                    "updates_sent_in_background": self._updates_sent,
                    "updates_on_responses": sum(self._on_responses.values()),
                    "max_updates_per_container": max(per_container.values(), default=0),
                    "update_failures": self._failures,
                    "drift_repaired": self._drift_repaired,
                    "drift_unrepaired": self._drift_unrepaired,
                    "released_not_running": self._not_running,
                    "start_checks_failed": self._start_checks_failed,
                    **{key: self._verified[key] for key in VERIFY_KEYS}}
