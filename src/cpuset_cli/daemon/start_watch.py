"""Watching containers that were placed and have not been seen to start.

The runtime says nothing when a container's start fails before its task exists (the commonest
failure: a missing binary, a bad mount, a wrong user), so every :data:`PERIOD` the daemon asks
the start probe (CRI and the kernel, in a worker thread) about the containers that have waited
at least :data:`SETTLE` seconds, and the service applies the start rule to the answer. A healthy
node starts a container well within that, so it never pays for a CRI call; a failed start gives
its CPUs back within ``SETTLE + PERIOD`` seconds (plus the probe's calls). One the runtime still
reports created is asked about again after a gap that doubles from ``PERIOD`` up to
:data:`MAX_GAP`: its start may be under way (runc creating the task takes seconds on a loaded
node, and fails at its end), and its grace may end (read at each judgement, so a reload applies
at once). Never on a hook's path; nothing while the runtime is disconnected or not yet
synchronized.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from cpuset_core import RuntimeState
from cpuset_service.placement import PlacementService
from cpuset_service.starts import StartProbe

_log = logging.getLogger("nri_cpuset.daemon")

PERIOD = 0.5
"""Seconds between two looks at the containers waiting for their start."""
SETTLE = 1.0
"""Seconds a container waits before the probe is asked about it."""
MAX_GAP = 2.0
"""Most seconds between two asks about a container the runtime still reports created: a
failed start is seen within that of the failure, however slow the task's creation was."""


class StartWatch:
    """Asks ``probe`` about ``service``'s containers not seen to start."""

    def __init__(self, service: PlacementService, probe: StartProbe, *,
                 period: float = PERIOD, settle: float = SETTLE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._service = service
        self._probe = probe
        self._period = period
        self._settle = settle
        self._clock = clock
        self._since: dict[str, float] = {}
        self._next: dict[str, tuple[float, float]] = {}
        """Containers the runtime reported created: when to ask again, and the gap used."""
        self._failing = False

    async def run(self) -> None:
        """Look every period, until cancelled."""
        while True:
            await asyncio.sleep(self._period)
            await self.look()

    async def look(self) -> None:
        """One look: ask about the containers due, apply the rule. A failure is logged (once
        until the probe answers again) and counted, never raised."""
        if not self._service.synchronized:
            return
        waiting = self._service.starts.waiting()
        now = self._clock()
        self._since = {cid: self._since.get(cid, now) for cid in waiting}
        self._next = {cid: t for cid, t in self._next.items() if cid in waiting}
        due = {cid: path for cid, path in waiting.items()
               if now - self._since[cid] >= self._settle
               and now >= self._next.get(cid, (now, 0.0))[0]}
        if not due:
            return
        try:
            reports = await asyncio.get_running_loop().run_in_executor(
                None, self._probe.reports, due)
        except Exception as exc:  # noqa: BLE001 - the runtime cannot tell now: ask again later
            self._service.observer.start_check_failed()
            if not self._failing:
                _log.warning("cannot tell whether containers not seen to start will run: %s; "
                             "they keep their CPUs until it can", exc)
            self._failing = True
            return
        if self._failing:
            _log.info("the runtime answers again about containers not seen to start")
        self._failing = False
        self._service.starts.reported(reports)
        for cid, report in reports.items():
            if report.state is RuntimeState.CREATED:  # its start may be under way
                gap = min(max(2 * self._next.get(cid, (0.0, 0.0))[1], self._period), MAX_GAP)
                self._next[cid] = (now + gap, gap)
