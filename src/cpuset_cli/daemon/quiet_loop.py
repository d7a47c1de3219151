"""When the node's quiet CPUs are reconciled (issue 43): after the first rebuild from the
runtime (so a restart does not put back what running pods still need), then whenever the
ledger changes what must be quiet, and every :data:`CHECK` seconds while some CPU is quiet:
that pass, with the wanted state unchanged, rewrites what was changed back since (irqbalance,
a driver, a hand) and tells an irqbalance started since; its writes are repairs
(:mod:`cpuset_cli.daemon.quiet_repairs`). The files are written in a worker thread: a pass
writes a few dozen procfs and sysfs files and the journal, and the runtime's hooks must not
wait."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

from cpuset_cli.daemon.quiet_repairs import tell_repairs
from cpuset_core import QuietState
from cpuset_core.ledger import Ledger
from cpuset_service.placement import PlacementService
from cpuset_service.quiet import QuietResult

_log = logging.getLogger("nri_cpuset.quiet")

POLL: Final = 0.05
"""Seconds between looks at the ledger (a new snapshot is a new object: the look is cheap)."""
RETRY: Final = 5.0
"""Seconds before a pass that raised (the journal could not be written) is tried again."""
CHECK: Final = 1.0
"""Seconds between checks that what was written still holds while some CPU is quiet: well
inside irqbalance's 10 s round, and a pass that finds nothing changed only reads a few dozen
files."""


class QuietLoop:
    """Runs the service's quiet-CPU passes for the daemon."""

    def __init__(self, service: PlacementService,
                 count: Callable[[str, int], None] = lambda _outcome, _files: None,
                 repairs: Callable[[str, int], None] = lambda _what, _files: None) -> None:
        self.service = service
        self.count = count
        """Told each pass's files by outcome (the metrics' ``quiet_files``)."""
        self.repairs = repairs
        """Told each check's repairs by what (the metrics' ``quiet_repairs``)."""
        self.passes = 0
        self.failures = 0
        self.repaired = 0
        self._checked = time.monotonic()
        self._unsettled = False
        """The last pass left problems (an irqbalance not reached): check it again."""

    def _due(self) -> QuietState | None:
        """The state to check again now, if a check is due."""
        applied = self.service.quiet.applied
        if applied is None or not (applied.cpus or self._unsettled):
            return None
        return applied if time.monotonic() - self._checked >= CHECK else None

    async def run(self) -> None:
        """Forever: every :data:`POLL` seconds once synchronized, a pass when the ledger
        changed what must be quiet, or a check of what was written when one is due."""
        seen: Ledger | None = None
        while True:
            await asyncio.sleep(POLL)
            if not self.service.synchronized:
                continue
            ledger = self.service.ledger
            state, checking = self._next(ledger, seen)
            seen = ledger
            if state is not None and not await self._pass(state, checking=checking):
                seen = None  # the ledger as new: the failed pass is tried again whole

    def _next(self, ledger: Ledger, seen: Ledger | None) -> tuple[QuietState | None, bool]:
        """What to apply now and whether it is a check: the state ``ledger`` wants when it
        is new and wants a change (not a check), else the applied state when a check is due,
        else nothing."""
        wanted = None if ledger is seen else self.service.quiet.wanted(ledger)
        if wanted is not None:
            return wanted, False
        return self._due(), True

    async def _pass(self, state: QuietState, *, checking: bool) -> bool:
        """Make the node ``state`` in a worker thread and tell what it did; ``False`` when
        the pass raised (logged, then :data:`RETRY` seconds waited)."""
        self._checked = time.monotonic()
        online = self.service.engine.topology.online
        try:
            result = await asyncio.to_thread(self.service.quiet.apply, state, online)
        except Exception as exc:  # noqa: BLE001 - logged, retried: never ends the daemon
            self.failures += 1
            _log.error("quiet CPUs not applied: %s; retrying in %.0f s", exc, RETRY)
            await asyncio.sleep(RETRY)
            return False
        self.passes += 1
        if result is not None:
            self._unsettled = bool(result.problems)
            self._tell(state, result, checking=checking)
        return True

    def _tell(self, state: QuietState, result: QuietResult, *, checking: bool) -> None:
        """Count and log what a pass did; a check's writes are repairs. A check that found
        all as written says nothing."""
        if checking and not (result.changed or result.restored or result.problems):
            return
        if checking and result.changed:
            self.repaired += len(result.changed)
            tell_repairs(state, result.changed, self.service.notices, self.repairs)
        for outcome, files in (("changed", result.changed),
                               ("restored", result.restored),
                               ("skipped", result.skipped),
                               ("failed", result.problems)):
            self.count(outcome, len(files))
        _log.info("quiet CPUs", extra={
            "irq_cpus": str(state.irq_cpus), "changed": len(result.changed),
            "restored": len(result.restored), "skipped": "; ".join(result.skipped),
            "problems": "; ".join(result.problems)})
