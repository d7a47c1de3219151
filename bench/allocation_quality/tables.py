"""The per-machine table: a row per policy, the row of deltas, the ``pinned`` trace's line."""

from __future__ import annotations

from allocation_quality.cases import Case, Outcome


def _pct(value: float | None, eligible: int) -> str:
    return "—" if value is None else f"{value:.1f} ({eligible})"


def _delta(ours: float | None, theirs: float | None) -> str:
    return "—" if ours is None or theirs is None else f"{ours - theirs:+.1f} pt"


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None:
        return "—"
    if ours == 0:
        return "×0" if theirs == 0 else "ours 0"
    return f"÷{theirs / ours:.1f}" if theirs >= ours else f"×{ours / theirs:.1f}"


HEADER = (f"{'trace':<10} {'policy':<8} {'admit/req':>10} {'NUMA-conf %':>13} "
          f"{'L3-conf %':>13} {'whole-core %':>13} {'split avg/max':>14} {'fail*':>6} "
          f"{'p50 ms':>8} {'p99 ms':>8} {'NUMA-sized':>11}")


def row(trace: str, policy: str, o: Outcome) -> str:
    m = o.metrics
    probes = f"{o.probes[0]}/{o.probes[1]}" if o.probes[1] else "—"
    return (f"{trace:<10} {policy:<8} {f'{m.admitted}/{m.requests}':>10} "
            f"{_pct(m.numa_confined.percent, m.numa_confined.eligible):>13} "
            f"{_pct(m.l3_confined.percent, m.l3_confined.eligible):>13} "
            f"{_pct(m.whole_core.percent, m.whole_core.eligible):>13} "
            f"{f'{m.split_cores.time_average:.2f}/{m.split_cores.max}':>14} "
            f"{m.failures_with_free_cpus:>6} {m.decision_ms.p50 or 0:>8.3f} "
            f"{m.decision_ms.p99 or 0:>8.3f} {probes:>11}")


def delta_row(case: Case) -> str:
    a, b = case.ours.metrics, case.kubelet.metrics
    split = _ratio(a.split_cores.time_average, b.split_cores.time_average)
    fails = a.failures_with_free_cpus - b.failures_with_free_cpus
    return (f"{'':<10} {'Δ, ratio':<8} {'':>10} "
            f"{_delta(a.numa_confined.percent, b.numa_confined.percent):>13} "
            f"{_delta(a.l3_confined.percent, b.l3_confined.percent):>13} "
            f"{_delta(a.whole_core.percent, b.whole_core.percent):>13} "
            f"{split:>14} {fails:>+6} "
            f"{_ratio(a.decision_ms.p50, b.decision_ms.p50):>8} "
            f"{_ratio(a.decision_ms.p99, b.decision_ms.p99):>8}")


def pins_row(case: Case) -> str:
    """The ``pinned`` trace's pins: where they landed under each policy, and the refusals."""
    p = case.pins
    return (f"{'':<10} pinned adds: {p.pins}; on or beside a CPU an integer container "
            f"held: ours {p.beside_ours}, kubelet {p.beside_kubelet}; on it: ours "
            f"{p.on_ours} (moved), kubelet {p.on_kubelet} (left sharing the CPU, not "
            f"a split); refused: ours {case.ours.rejected_pins}, kubelet "
            f"{case.kubelet.rejected_pins}")
