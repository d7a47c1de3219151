"""The benchmark's table: per case the duty cycle's lateness, the job's time and what the probe
saw of its CPU, then each figure's ratio to the floor's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from isolation_bench.cases import Case
from isolation_bench.stats import Lateness


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    """One case measured: lateness (µs), the job's time (ms), deadlines skipped, involuntary
    context switches (duty cycle + job), the probe's allowed CPUs and the device interrupts they
    took per second while it ran."""

    case: Case
    lateness: Lateness
    job_ms: float
    skipped: int
    switches: int
    cpus: str
    irqs_per_s: float


def ratio(value: float, floor: float) -> str:
    """``value`` over ``floor`` as ``1.93x``; ``n/a`` when the floor is not above zero (a
    ratio to nothing, or to a negative lateness, says nothing)."""
    if floor <= 0:
        return "n/a"
    return f"{value / floor:.2f}x"


FIGURES = (f"{'case':<18}{'probe CPUs':>11}{'p50 µs':>10}{'p99 µs':>10}{'p99.9 µs':>10}"
           f"{'max µs':>10}{'skipped':>9}{'job ms':>10}{'inv. cs':>9}{'dev irq/s':>11}")
RATIOS = (f"{'ratio to the floor':<18}{'':>11}{'p50':>10}{'p99':>10}{'p99.9':>10}{'max':>10}"
          f"{'':>9}{'job':>10}")


def figures_row(result: CaseResult) -> str:
    late = result.lateness
    return (f"{result.case.name:<18}{result.cpus:>11}{late.p50:>10.1f}{late.p99:>10.1f}"
            f"{late.p999:>10.1f}{late.max:>10.1f}{result.skipped:>9}{result.job_ms:>10.1f}"
            f"{result.switches:>9}{result.irqs_per_s:>11.1f}")


def ratios_row(result: CaseResult, floor: CaseResult) -> str:
    late, base = result.lateness, floor.lateness
    return (f"{result.case.name:<18}{'':>11}{ratio(late.p50, base.p50):>10}"
            f"{ratio(late.p99, base.p99):>10}{ratio(late.p999, base.p999):>10}"
            f"{ratio(late.max, base.max):>10}{'':>9}{ratio(result.job_ms, floor.job_ms):>10}")


def table(results: Sequence[CaseResult]) -> list[str]:
    """The figures, then the ratios to the first result (the floor); ``ValueError`` without
    results."""
    if not results:
        raise ValueError("no case was measured")
    floor = results[0]
    return [FIGURES, *map(figures_row, results), "", RATIOS,
            *(ratios_row(result, floor) for result in results)]
