"""When the node's quiet CPUs are reconciled (issue 43): after the first rebuild from the
runtime (so a restart does not put back what running pods still need), then whenever the
ledger changes what must be quiet. The files are written in a worker thread: a pass writes
a few dozen procfs and sysfs files and the journal, and the runtime's hooks must not wait."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from cpuset_service.placement import PlacementService

_log = logging.getLogger("nri_cpuset.quiet")

POLL: Final = 0.05
"""Seconds between looks at the ledger (a new snapshot is a new object: the look is cheap)."""
RETRY: Final = 5.0
"""Seconds before a pass that raised (the journal could not be written) is tried again."""


class QuietLoop:
    """Runs the service's quiet-CPU passes for the daemon."""

    def __init__(self, service: PlacementService,
                 count: Callable[[str, int], None] = lambda _outcome, _files: None) -> None:
        self.service = service
        self.count = count
        """Told each pass's files by outcome (the metrics' ``quiet_files``)."""
        self.passes = 0
        self.failures = 0

    async def run(self) -> None:
        seen = None
        while True:
            await asyncio.sleep(POLL)
            ledger = self.service.ledger
            if not self.service.synchronized or ledger is seen:
                continue
            seen = ledger
            state = self.service.quiet.wanted(ledger)
            if state is None:
                continue
            online = self.service.engine.topology.online
            try:
                result = await asyncio.to_thread(self.service.quiet.apply, state, online)
            except Exception as exc:  # noqa: BLE001 - logged, retried: never ends the daemon
                self.failures += 1
                _log.error("quiet CPUs not applied: %s; retrying in %.0f s", exc, RETRY)
                seen = None
                await asyncio.sleep(RETRY)
                continue
            self.passes += 1
            if result is not None:
                for outcome, files in (("changed", result.changed),
                                       ("restored", result.restored),
                                       ("skipped", result.skipped),
                                       ("failed", result.problems)):
                    self.count(outcome, len(files))
                _log.info("quiet CPUs", extra={
                    "irq_cpus": str(state.irq_cpus), "changed": len(result.changed),
                    "restored": len(result.restored), "skipped": "; ".join(result.skipped),
                    "problems": "; ".join(result.problems)})
