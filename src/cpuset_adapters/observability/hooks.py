"""Runtime calls in flight: when each started and under which timeout, readable from any
thread. ``/healthz`` reads it from the HTTP thread, so it answers even when the event loop that
runs the hooks is stuck."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]
"""Monotonic seconds (``time.monotonic``; tests inject their own)."""

STUCK_FACTOR = 2.0
"""A hook in flight for this many request timeouts means the event loop is stuck: the runtime
gave up on it long ago (and dropped the plugin), yet it has not returned."""


@dataclass(frozen=True, slots=True)
class InFlight:
    """One runtime call being handled."""

    hook: str
    started: float
    timeout_s: float


class HookTracker:
    """Start times of the runtime calls being handled (thread-safe)."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._in_flight: dict[int, InFlight] = {}

    def start(self, hook: str, timeout_s: float) -> int:
        """Record a call starting now; return its token."""
        with self._lock:
            token = next(self._tokens)
            self._in_flight[token] = InFlight(hook, self._clock(), timeout_s)
        return token

    def finish(self, token: int) -> tuple[str, float] | None:
        """Forget the call; return its hook and duration in seconds (``None`` if unknown)."""
        with self._lock:
            call = self._in_flight.pop(token, None)
        if call is None:
            return None
        return call.hook, self._clock() - call.started

    def stuck(self) -> list[tuple[InFlight, float]]:
        """Calls in flight for longer than :data:`STUCK_FACTOR` request timeouts, with how
        long each has been running."""
        now = self._clock()
        with self._lock:
            calls = list(self._in_flight.values())
        return [(c, now - c.started) for c in calls
                if now - c.started > STUCK_FACTOR * c.timeout_s]
