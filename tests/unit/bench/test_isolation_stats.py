"""The isolation bench's percentiles: nearest rank, so every figure is a measured value."""

from __future__ import annotations

import pytest
from isolation_bench.stats import Lateness, percentile


@pytest.mark.parametrize(("p", "expected"), [
    (50, 5), (90, 9), (99, 10), (99.9, 10), (100, 10), (10, 1), (0.1, 1)])
def test_the_nearest_rank_of_one_to_ten(p: float, expected: int) -> None:
    assert percentile(list(range(10, 0, -1)), p) == expected


def test_p999_of_a_thousand_values_is_the_999th_not_the_largest() -> None:
    # 99.9 % of 1000 is 999.0000000000001 in floating point: rank 999, not 1000.
    assert percentile(list(range(1, 1001)), 99.9) == 999


def test_p999_of_fewer_than_a_thousand_values_is_the_largest() -> None:
    assert percentile([3, 1, 2], 99.9) == 3


@pytest.mark.parametrize("p", [0, -1, 100.5])
def test_a_percentile_outside_0_to_100_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        percentile([1, 2], p)


def test_no_values_have_no_percentile() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_lateness_is_summarised_in_microseconds_negative_values_kept() -> None:
    late = Lateness.from_ns([-2000, 1000, 3000, 250_000])
    assert (late.p50, late.p99, late.p999, late.max, late.periods) == (
        1.0, 250.0, 250.0, 250.0, 4)
    assert Lateness.from_ns([-5000]).p50 == -5.0
