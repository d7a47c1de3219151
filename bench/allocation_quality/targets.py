"""The issue's targets for our policy, each MET or MISSED, with the kubelet's value beside it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from allocation_quality.cases import Case, Outcome
from cpuset_cli.placement_quality import Metrics, Ratio

NUMA_TARGET = L3_TARGET = 99.0
WHOLE_CORE_TARGET = 100.0
P99_TARGET_MS = 1.0


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    met: bool
    value: str
    kubelet: str
    misses: list[str]


def _worst(cases: Sequence[Case], pick: Callable[[Metrics], Ratio],
           threshold: float) -> tuple[str, str, list[str]]:
    """Our worst case and overall share, the kubelet's, and our cases below ``threshold``."""
    def summary(which: Callable[[Case], Outcome]) -> tuple[str, list[str]]:
        met = eligible = 0
        worst: tuple[float, str] | None = None
        misses: list[str] = []
        for case in cases:
            share = pick(which(case).metrics)
            if share.percent is None:
                continue
            met += share.met
            eligible += share.eligible
            where = f"{case.machine} × {case.trace}"
            if worst is None or share.percent < worst[0]:
                worst = (share.percent, where)
            if share.percent < threshold:
                misses.append(f"{where}: {share.percent:.2f} % "
                              f"({share.met} of {share.eligible})")
        total = f"{100 * met / eligible:.2f} % overall" if eligible else "nothing eligible"
        low = f"worst {worst[0]:.2f} % ({worst[1]})" if worst else ""
        return f"{low}; {total}", misses

    ours, misses = summary(lambda c: c.ours)
    theirs, _ = summary(lambda c: c.kubelet)
    return ours, theirs, misses


def targets(cases: Sequence[Case]) -> list[Target]:
    result: list[Target] = []
    for name, threshold, pick in (
        ("≥ 99 % NUMA-confined where the request fits one node", NUMA_TARGET,
         lambda m: m.numa_confined),
        ("≥ 99 % L3-confined where the request fits one L3 group", L3_TARGET,
         lambda m: m.l3_confined),
        ("100 % whole cores for multiples of the threads per core", WHOLE_CORE_TARGET,
         lambda m: m.whole_core),
    ):
        ours, theirs, misses = _worst(cases, pick, threshold)
        result.append(Target(name, not misses, ours, theirs, misses))
    fails = [f"{c.machine} × {c.trace}: {c.ours.metrics.failures_with_free_cpus}"
             for c in cases if c.ours.metrics.failures_with_free_cpus]
    kubelet_fails = sum(c.kubelet.metrics.failures_with_free_cpus for c in cases)
    result.append(Target("no admission failure while enough CPUs are free", not fails,
                         f"{sum(c.ours.metrics.failures_with_free_cpus for c in cases)} "
                         f"failure(s)", f"{kubelet_fails} failure(s)", fails))
    big = [c for c in cases if c.machine == "BIG_1024"]
    if big:
        worst = max(big, key=lambda c: c.ours.metrics.decision_ms.p99 or 0)
        p99 = worst.ours.metrics.decision_ms.p99 or 0
        their_p99 = max(c.kubelet.metrics.decision_ms.p99 or 0 for c in big)
        misses = [f"{c.machine} × {c.trace}: p99 {c.ours.metrics.decision_ms.p99} ms"
                  for c in big if (c.ours.metrics.decision_ms.p99 or 0) >= P99_TARGET_MS]
        result.append(Target("p99 decision < 1 ms at 1024 CPUs", not misses,
                             f"worst p99 {p99:.3f} ms ({worst.trace})",
                             f"worst p99 {their_p99:.3f} ms (Python re-implementation)", misses))
    return result
