"""Notices the event loop standing still, and says where it stands.

Every hook, write and answer of the daemon runs on one event loop; a call that blocks it (a
cgroup write the kernel holds, a lock, a slow disk) stops all of them, and the runtime closes
the plugin when its answers are late. From outside that looks like a plugin gone silent
(VM lab, 2026-12-06: a guest's plugin answered nothing for 70 s, then found its connection
closed, with no log line between). A thread of its own sees the loop's tick age; past
:data:`STALL_AFTER` it logs a warning with the loop thread's Python stack (where it is stuck)
and counts the stall, and when the loop turns again it logs how long it stood.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Final

_log = logging.getLogger("nri_cpuset.daemon")

STALL_AFTER: Final = 5.0
"""Seconds without a tick before the loop counts as stalled: above any hook's work at 500
containers (tens of ms) and any Synchronize's, below the runtime's request timeout (2 s by
default on containerd, often raised to 5-10 s)."""
TICK: Final = 0.5
"""Seconds between the loop's ticks, and between the watching thread's looks."""


class LoopWatch:
    """``run()`` on the loop to watch; ``on_stall`` is called (from the watching thread) once
    per stall, when it is noticed."""

    def __init__(self, on_stall: Callable[[], None] = lambda: None, *,
                 stall_after: float = STALL_AFTER, tick: float = TICK,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._on_stall = on_stall
        self._stall_after, self._tick_every, self._clock = stall_after, tick, clock
        self._tick = clock()
        self._loop_thread: int | None = None
        self._stalled_since: float | None = None
        self._stop = threading.Event()

    async def run(self) -> None:
        """Tick until cancelled, with the watching thread running alongside."""
        self._loop_thread = threading.get_ident()
        self.tick()
        self._stop.clear()
        watcher = threading.Thread(target=self._watch, name="loop-watch", daemon=True)
        watcher.start()
        try:
            while True:
                self.tick()
                await asyncio.sleep(self._tick_every)
        finally:
            self._stop.set()
            watcher.join(timeout=2 * self._tick_every)

    def tick(self) -> None:
        """The loop turned (``run`` calls it every :data:`TICK`)."""
        self._tick = self._clock()

    def _watch(self) -> None:
        while not self._stop.wait(self._tick_every):
            self.look()

    def look(self) -> None:
        """One look at the tick's age: a new stall is logged and counted, an ended one told."""
        tick = self._tick
        age = self._clock() - tick
        if self._stalled_since is None and age >= self._stall_after:
            self._stalled_since = tick
            _log.warning("the event loop has not turned for %.1f s (no hook is answered "
                         "meanwhile); it is at:\n%s", age, self._where())
            self._on_stall()
        elif self._stalled_since is not None and tick != self._stalled_since:
            _log.warning("the event loop turned again after standing for %.1f s",
                         tick - self._stalled_since)
            self._stalled_since = None

    def _where(self) -> str:
        frame = sys._current_frames().get(self._loop_thread or -1)
        if frame is None:
            return "  (the loop's thread is gone)"
        return "".join(traceback.format_stack(frame)).rstrip()
