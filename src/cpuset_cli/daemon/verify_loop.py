"""When the verifier runs: shortly after each burst of decisions or background sends settles,
and every ``period`` seconds besides; never on a hook's path, and not while the runtime is
busy: a due pass waits until the runtime has been quiet for ``settle`` seconds too (its reads
take CPU time a pod's creation would wait for on a small node; issue 45), for at most
``period`` seconds (a node that never goes quiet is still verified).

It notices a burst by looking (every :data:`TICK` seconds, two identity checks) at whether the
ledger or the background sends changed, so nothing has to call it. A pass reads every
container's cgroup in a worker thread and judges it back on the event loop. While the runtime
is disconnected or not yet synchronized there is no pass: the ledger is about to be rebuilt.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Collection, Mapping

from cpuset_core.verify import Mismatch, Observed
from cpuset_service.placement import PlacementService
from cpuset_service.verifier import Verifier

_log = logging.getLogger("nri_cpuset.verifier")

TICK = 0.05
SETTLE = 0.25
"""Quiet seconds after the last change before a pass: long enough for the runtime to apply
what rode on its last answer, short enough to repair a dropped update within a second."""

Read = Callable[[Mapping[str, str], Collection[str]], dict[str, Observed]]
"""Container id → cgroup path in, and the containers whose CFS quota is judged; what the
kernel enforces out (blocking file reads)."""


class VerifierLoop:
    """Runs :class:`Verifier` passes for ``service``, reading cgroups with ``read``."""

    def __init__(self, service: PlacementService, verifier: Verifier, read: Read, *,
                 period: float, settle: float = SETTLE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._service = service
        self._verifier = verifier
        self._read = read
        self._period = period
        self._settle = settle
        self._clock = clock
        self.last_pass_seconds = 0.0
        """How long the last pass took, reading included (``inspect`` and the benchmark)."""
        self.runtime_quiet: Callable[[], float] = lambda: math.inf
        """Seconds since the runtime's last call (the daemon binds it to its session)."""

    async def run(self) -> None:
        """Pass after every settled burst and every ``period`` seconds, until cancelled."""
        ledger, sent = self._service.ledger, self._service.pusher.sent
        changed_at: float | None = None
        due_since: float | None = None
        last_pass = self._clock()
        while True:
            await asyncio.sleep(TICK)
            now = self._clock()
            if self._service.ledger is not ledger or self._service.pusher.sent != sent:
                ledger, sent, changed_at = self._service.ledger, self._service.pusher.sent, now
            settled = changed_at is not None and now - changed_at >= self._settle
            if not (settled or now - last_pass >= self._period) or not self._service.synchronized:
                continue
            due_since = now if due_since is None else due_since
            if self.runtime_quiet() < self._settle and now - due_since < self._period:
                continue  # the runtime is at work (a pod being made?): let it have the CPUs
            changed_at, due_since, last_pass = None, None, now
            await self.pass_once()

    def drifting(self) -> list[tuple[Mismatch, int]]:
        """Containers off their placement at the last pass, with the re-sends so far."""
        return self._verifier.drifting()

    async def pass_once(self) -> None:
        """One pass: snapshot, read off the loop, judge. A failure is logged, never raised."""
        start = self._clock()
        read_from, paths = self._verifier.snapshot()
        quotas = self._verifier.quotas_judged()
        try:
            observed = await asyncio.get_running_loop().run_in_executor(
                None, self._read, paths, quotas)
            self._verifier.verify(observed, read_from=read_from)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the verifier is an aid: the plugin pins on
            _log.exception("verifier pass failed")
        self.last_pass_seconds = self._clock() - start
