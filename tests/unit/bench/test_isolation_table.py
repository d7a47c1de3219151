"""The isolation bench's table: each case's figures, then their ratios to the floor."""

from __future__ import annotations

import pytest
from isolation_bench.cases import FLOOR, NO_PLUGIN, Case
from isolation_bench.stats import Lateness
from isolation_bench.table import FIGURES, RATIOS, CaseResult, ratio, table


def result(case: Case, p50: float, p99: float, job_ms: float) -> CaseResult:
    return CaseResult(case=case, lateness=Lateness(p50=p50, p99=p99, p999=2 * p99, max=4 * p99,
                                                   periods=10_000),
                      job_ms=job_ms, skipped=3, switches=12, cpus="0-1", irqs_per_s=5.25)


@pytest.mark.parametrize(("value", "floor", "expected"), [
    (200.0, 100.0, "2.00x"), (50.0, 100.0, "0.50x"), (3.0, 0.0, "n/a"), (3.0, -1.5, "n/a")])
def test_a_ratio_to_the_floor(value: float, floor: float, expected: str) -> None:
    assert ratio(value, floor) == expected


def test_the_table_lists_figures_then_ratios_to_the_first_case() -> None:
    lines = table([result(FLOOR, 100.0, 200.0, 300.0), result(NO_PLUGIN, 150.0, 1000.0, 600.0)])
    assert lines[0] == FIGURES
    assert lines[1].split() == ["floor", "0-1", "100.0", "200.0", "400.0", "800.0", "3", "300.0",
                                "12", "5.2"]
    assert lines[2].split()[:3] == ["no", "plugin", "0-1"]
    assert lines[3:5] == ["", RATIOS]
    assert lines[5].split() == ["floor", "1.00x", "1.00x", "1.00x", "1.00x", "1.00x"]
    assert lines[6].split() == ["no", "plugin", "1.50x", "5.00x", "5.00x", "5.00x", "2.00x"]


def test_a_floor_of_no_lateness_gives_no_ratio_rather_than_a_division_by_zero() -> None:
    lines = table([result(FLOOR, 0.0, 200.0, 300.0), result(NO_PLUGIN, 150.0, 1000.0, 600.0)])
    assert lines[-1].split()[2] == "n/a"


def test_no_results_make_no_table() -> None:
    with pytest.raises(ValueError, match="no case"):
        table([])
