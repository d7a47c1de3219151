"""Percentiles of the probe's lateness, by the nearest-rank method (every figure is a value
the probe measured, never an interpolation between two)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PERCENTILES = (50.0, 99.0, 99.9)


def percentile(values: Sequence[int], p: float) -> int:
    """The nearest-rank ``p``-th percentile of ``values``: the smallest value with at least
    ``p`` % of them at or below it. Raises ``ValueError`` on no values or ``p`` outside
    (0, 100]."""
    if not values:
        raise ValueError("no values to take a percentile of")
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} outside (0, 100]")
    ordered = sorted(values)
    # round() first: 99.9 % of 1000 is 999.0000000000001 in floating point, not rank 1000.
    rank = math.ceil(round(p / 100 * len(ordered), 9))
    return ordered[max(rank, 1) - 1]


@dataclass(frozen=True, slots=True, kw_only=True)
class Lateness:
    """How late the duty cycle's work finished, in microseconds, over ``periods`` periods."""

    p50: float
    p99: float
    p999: float
    max: float
    periods: int

    @classmethod
    def from_ns(cls, late_ns: Sequence[int]) -> Lateness:
        """The summary of per-period lateness given in nanoseconds (``ValueError`` if none)."""
        p50, p99, p999 = (percentile(late_ns, p) / 1000 for p in PERCENTILES)
        return cls(p50=p50, p99=p99, p999=p999, max=max(late_ns) / 1000, periods=len(late_ns))
