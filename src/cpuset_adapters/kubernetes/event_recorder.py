"""Sending the plugin's Kubernetes Events from a background thread, never from a hook.

:meth:`EventRecorder.record` only stamps the event with the time and queues it; a worker thread
sends what is queued, oldest first. The queue is bounded: when it is full the oldest event is
dropped and counted (the newest say the most about the node now). Repeats aggregate as the
kubelet's recorder (client-go ``tools/events``) does: the same reason and note for the same
container (or object) within :data:`WINDOW` of its last occurrence is not a new Event but a
``series`` update of the first one, a JSON merge PATCH of ``count`` and ``lastObservedTime``;
an event whose series has expired on the server (or was deleted) is created again with its
series.

An unreachable, slow or refusing API server never reaches the caller: each failed attempt is
counted by its reason, logged once per reason until a request succeeds again, and retried with
back-off (1 s doubling to 60 s) while new events queue up behind it. An event the server found
invalid (or that :mod:`event_rules` says it would) is a defect in the plugin, not an outage: it
is logged, counted and abandoned, never retried.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

from cpuset_adapters.kubernetes.api_client import ApiError, Created
from cpuset_adapters.kubernetes.event_object import PlacementEvent, build_event, series_patch
from cpuset_adapters.kubernetes.event_rules import creation_violations

CAPACITY: Final = 1000
"""Events queued at most (client-go's broadcaster queues 1000 too)."""
WINDOW: Final = 360.0
"""Seconds after an occurrence in which the same one again extends its series (client-go's
``finishTime``: 6 minutes)."""
BACKOFF_FIRST: Final = 1.0
BACKOFF_MAX: Final = 60.0
PERMANENT: Final = frozenset({"invalid", "error", "not-found"})
"""Failure reasons no retry can mend: the server refused the event itself (422, other 4xx), or
its namespace is gone (404 to a creation; a series whose event is gone is created again)."""
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

_log = logging.getLogger(__name__)


class EventSink(Protocol):
    """Where events go (``cpuset_adapters.kubernetes.api_client.EventsApi``); blocking."""

    def create(self, event: dict[str, Any]) -> Created: ...

    def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RecorderCounts:
    """What became of the recorded events so far: created (``sent``), delivered as a series
    update (``aggregated``), dropped from the full queue, abandoned as invalid, and each
    failed attempt by its reason."""

    sent: int
    aggregated: int
    dropped: int
    abandoned: int
    failed: dict[str, int]


@dataclass(frozen=True, slots=True)
class _Pending:
    event: PlacementEvent
    at: int  # microseconds since the epoch, when it was recorded: unique, increasing


@dataclass(slots=True)
class _Series:
    created: dict[str, Any]  # the event as created: created again if it is gone
    count: int
    last: int  # microseconds since the epoch


class _Abandon(Exception):  # noqa: N818 - a signal inside this module, not an error type
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class EventRecorder:
    """Queues events for ``sink`` and sends them from one worker thread (:meth:`start`), as the
    plugin on node ``instance``. ``clock`` (seconds since the epoch) and ``wait`` (sleep for the
    given seconds) are the tests' to replace; the default wait ends early on :meth:`stop`."""

    def __init__(self, sink: EventSink, *, instance: str, capacity: int = CAPACITY,
                 window: float = WINDOW, clock: Callable[[], float] = time.time,
                 wait: Callable[[float], object] | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self._sink, self._instance = sink, instance
        self._capacity, self._window, self._clock = capacity, window, clock
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait
        self._lock = threading.Condition()
        self._queue: deque[_Pending] = deque()
        self._busy = False  # the head is being sent
        self._overflowing = False  # dropped since the queue was last empty
        self._last_at = 0
        self._abandoned_reasons: set[str] = set()
        self._series: dict[tuple[str, str, str, str], _Series] = {}
        self._counts = {"sent": 0, "aggregated": 0, "dropped": 0, "abandoned": 0}
        self._failed: dict[str, int] = {}
        self._failing: str | None = None
        self._failures = 0
        self._backoff, self._retry_at = BACKOFF_FIRST, 0.0
        self._thread: threading.Thread | None = None

    def record(self, event: PlacementEvent) -> None:
        """Queue ``event``, observed now; never blocks on the API server. A full queue drops
        its oldest event."""
        with self._lock:
            first_drop = False
            if len(self._queue) >= self._capacity:
                self._queue.popleft()
                self._counts["dropped"] += 1
                first_drop, self._overflowing = not self._overflowing, True
            # The event's name is the pod's and this time's: two events of one pod recorded
            # within a microsecond must still differ, or the second would find the first's name
            # taken and be lost.
            self._last_at = max(int(self._clock() * 1_000_000), self._last_at + 1)
            self._queue.append(_Pending(event, self._last_at))
            self._lock.notify_all()
        if first_drop:  # once until the queue has emptied again
            _log.warning("event queue full (%d): dropping the oldest events", self._capacity)

    def counts(self) -> RecorderCounts:
        """A snapshot of the counters (for metrics)."""
        with self._lock:
            return RecorderCounts(failed=dict(self._failed), **self._counts)

    def pending(self) -> int:
        """Events queued and not yet delivered, dropped or abandoned."""
        with self._lock:
            return len(self._queue)

    def start(self) -> None:
        """Start the worker thread (a daemon: it never holds the process up)."""
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the worker after its current request; what is still queued is not sent."""
        with self._lock:
            self._stopping.set()
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def drain(self, timeout: float) -> bool:
        """Wait until the queue is empty and nothing is being sent; False if ``timeout``
        seconds passed first (a shutdown's last chance to deliver)."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._queue and not self._busy, timeout)

    def step(self) -> bool:
        """Do the worker's next piece of work: wait out a back-off, or send the oldest queued
        event. Return False when there was nothing to do. Called by the worker thread only,
        or by a test in its place (never both: the series and the back-off are the worker's)."""
        with self._lock:
            if not self._queue:
                return False
            head, self._busy = self._queue[0], True
        try:
            now = self._clock()
            if now < self._retry_at:
                self._wait(self._retry_at - now)
                return True
            self._forget_expired(now)
            self._attempt(head)
            return True
        finally:
            with self._lock:
                self._busy = False
                self._lock.notify_all()

    def _run(self) -> None:
        while not self._stopping.is_set():
            with self._lock:
                self._lock.wait_for(lambda: self._queue or self._stopping.is_set())
            if not self._stopping.is_set():
                self.step()

    def _attempt(self, head: _Pending) -> None:
        try:
            outcome = self._deliver(head)
        except _Abandon as exc:
            self._abandon(head, exc.reason, exc.detail)
        except ApiError as exc:
            if exc.reason in PERMANENT:
                self._abandon(head, exc.reason, exc.detail)
            else:
                self._failed_attempt(exc)
        except Exception as exc:  # noqa: BLE001 - a defect loses this event, never the worker
            self._abandon(head, "error", f"{type(exc).__name__}: {exc}")
        else:
            self._finish(head, outcome)
            self._recovered()

    def _deliver(self, pending: _Pending) -> str:
        """Create the event, or extend its series; return which (the counter's name)."""
        key, at = pending.event.key, _EPOCH + timedelta(microseconds=pending.at)
        series = self._series.get(key)
        if series is not None and pending.at - series.last <= self._window * 1_000_000:
            patch = series_patch(count=series.count + 1, last_observed=at)
            metadata = series.created["metadata"]
            try:
                self._sink.patch(metadata["namespace"], metadata["name"], patch)
            except ApiError as exc:
                if exc.reason != "not-found":
                    raise
                self._sink.create(series.created | patch)  # expired on the server: again
            series.count, series.last = series.count + 1, pending.at
            return "aggregated"
        event = build_event(pending.event, instance=self._instance, at=at)
        if violations := creation_violations(event):
            raise _Abandon("invalid", "the API server would refuse it: "
                           + "; ".join(map(str, violations)))
        self._sink.create(event)
        self._series[key] = _Series(created=event, count=1, last=pending.at)
        return "sent"

    def _finish(self, head: _Pending, outcome: str, *, failed: str | None = None) -> None:
        with self._lock:
            if self._queue and self._queue[0] is head:  # not dropped meanwhile
                self._queue.popleft()
            self._overflowing = self._overflowing and bool(self._queue)
            self._counts[outcome] += 1
            if failed is not None:
                self._failed[failed] = self._failed.get(failed, 0) + 1

    def _abandon(self, head: _Pending, reason: str, detail: str) -> None:
        # A defect repeats for every event alike: said once per reason, then at debug.
        level = logging.DEBUG if reason in self._abandoned_reasons else logging.ERROR
        self._abandoned_reasons.add(reason)
        _log.log(level, "event %s %s abandoned (%s): %s", head.event.regarding.name,
                 head.event.reason, reason, detail)
        self._finish(head, "abandoned", failed=reason)

    def _failed_attempt(self, exc: ApiError) -> None:
        with self._lock:
            self._failed[exc.reason] = self._failed.get(exc.reason, 0) + 1
        self._failures += 1
        self._retry_at = self._clock() + self._backoff
        self._backoff = min(self._backoff * 2, BACKOFF_MAX)
        if exc.reason != self._failing:
            _log.error("events not delivered (%s): %s; placements are not affected, "
                       "retrying with back-off", exc.reason, exc.detail)
            self._failing = exc.reason
        else:
            _log.debug("events still not delivered (%s): %s", exc.reason, exc.detail)

    def _recovered(self) -> None:
        if self._failing is not None:
            _log.warning("events delivered again after %d failed attempt(s)", self._failures)
        self._failing, self._failures = None, 0
        self._backoff, self._retry_at = BACKOFF_FIRST, 0.0

    def _forget_expired(self, now: float) -> None:
        # A series ends WINDOW after its last occurrence; forgetting it bounds the memory to
        # what happened within the window.
        expired = [key for key, series in self._series.items()
                   if now * 1_000_000 - series.last > self._window * 1_000_000]
        for key in expired:
            del self._series[key]
