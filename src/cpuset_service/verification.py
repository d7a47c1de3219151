"""Following each container found off its placement until the kernel shows it repaired.

A verifier pass reads every container's cgroup (an adapter does, off the event loop) and the
core says which differ from the ledger (:func:`cpuset_core.verify.mismatches`). This tracker
remembers them across passes: a container is *found* once, re-sent its placement at every pass
while it differs, *repaired* when a later pass shows it right, and *unrepairable* once
:data:`MAX_ATTEMPTS` passes did not repair it (it is still re-sent: a runtime that recovers is
caught). An unreadable cgroup cannot be repaired by an update: it is found, not re-sent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from cpuset_core.verify import Cause, Mismatch

MAX_ATTEMPTS = 5
"""Passes that re-send a placement before the container counts as unrepairable."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One pass: what it checked and found, and what changed since the last one."""

    checked: int
    drifting: tuple[Mismatch, ...]
    """Every container off its placement now."""
    found: tuple[Mismatch, ...] = ()
    """Containers newly found off their placement."""
    repaired: tuple[Mismatch, ...] = ()
    """Containers found earlier that this pass shows right."""
    unrepairable: tuple[Mismatch, ...] = ()
    """Containers that just reached :data:`MAX_ATTEMPTS`."""
    resend: tuple[str, ...] = ()
    """Containers whose placement must be sent again."""

    def found_by_cause(self) -> Counter[Cause]:
        return Counter(m.cause for m in self.found)


@dataclass(slots=True)
class _Open:
    mismatch: Mismatch
    attempts: int = 0


class DriftTracker:
    """Containers found off their placement and not yet seen repaired."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}

    def judge(self, found: list[Mismatch], checked: Collection[str]) -> Verdict:
        """Fold one pass in: ``found`` among the ``checked`` containers."""
        now = {m.container_id: m for m in found}
        repaired = tuple(self._open.pop(cid).mismatch for cid in sorted(self._open)
                         if cid in checked and cid not in now)
        new: list[Mismatch] = []
        resend: list[str] = []
        gave_up: list[Mismatch] = []
        for cid, mismatch in now.items():
            tracked = self._open.get(cid)
            if tracked is None:
                tracked = self._open[cid] = _Open(mismatch)
                new.append(mismatch)
            tracked.mismatch = mismatch
            if mismatch.cause == "unreadable":
                continue
            tracked.attempts += 1
            resend.append(cid)
            if tracked.attempts == MAX_ATTEMPTS:
                gave_up.append(mismatch)
        return Verdict(checked=len(checked), drifting=tuple(now.values()), found=tuple(new),
                       repaired=repaired, unrepairable=tuple(gave_up), resend=tuple(resend))

    def forget(self, container_id: str) -> None:
        """The container is gone: it is neither repaired nor unrepairable any more."""
        self._open.pop(container_id, None)

    def open(self) -> list[tuple[Mismatch, int]]:
        """Every container off its placement at the last look, with the re-sends so far."""
        return [(o.mismatch, o.attempts) for _, o in sorted(self._open.items())]
