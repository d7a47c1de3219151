"""The run's record (``parts.Recorder``): the step it is at, the last 30 operations and their
outcomes (a violation's report), what it found, and the closing line's counts (``Tally``)."""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Final

from .history import Op

RECENT: Final = 30
"""Operations and outcomes a violation's report shows."""


@dataclass(slots=True)
class Tally:
    """What the run did and found, for the closing line."""

    ops: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    admitted: Counter[str] = field(default_factory=Counter)
    """Containers admitted, by the model's kind: which kinds the walk really placed."""
    checks: int = 0
    quiet_checks: int = 0
    """Of those, the host's quiet-CPU files checked (``quiet_invariant``)."""
    violations: list[str] = field(default_factory=list)
    settles: list[float] = field(default_factory=list)
    """Seconds from a step's end until its eventual invariants held."""
    memory: list[tuple[int, int, int]] = field(default_factory=list)
    """(plugin pid, VmRSS KiB, open descriptors) at each settle."""


class Record:
    """Written by operations (from a burst's workers and the status hammer too) and by the
    runner, which numbers the steps and stops the run on what was found."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.step = 0
        self.recent: deque[str] = deque(maxlen=RECENT)
        self.found: list[str] = []
        self._lock = threading.Lock()

    def began(self, op: Op, at: float) -> None:
        """``op`` starts, ``at`` seconds into the run."""
        with self._lock:
            self.recent.append(f"  step {self.step} (+{at:.1f} s): {op}")
            self.tally.ops[op["kind"]] += 1

    def outcome(self, text: str) -> None:
        with self._lock:
            self.recent.append(f"  step {self.step}:   -> {text}")

    def violation(self, text: str) -> None:
        with self._lock:
            self.found.append(text)

    def fault(self, kind: str) -> None:
        with self._lock:
            self.tally.faults[kind] += 1

    def refusal(self, reason: str) -> None:
        with self._lock:
            self.tally.refusals[reason] += 1

    def counted(self, kind: str) -> None:
        with self._lock:
            self.tally.ops[kind] += 1

    def admitted(self, kind: str) -> None:
        with self._lock:
            self.tally.admitted[kind] += 1
