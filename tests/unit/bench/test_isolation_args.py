"""The isolation bench's command line: sizes from --quick and the overrides, bad values
refused."""

from __future__ import annotations

import argparse

import pytest
from isolation import positive, sizes_from, slower
from isolation_bench.cases import FULL, QUICK


def args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"quick": False, "periods": None, "spinners": None,
                                 "rounds": None, **given})


def test_the_full_and_quick_sizes() -> None:
    assert sizes_from(args()) == FULL
    assert sizes_from(args(quick=True)) == QUICK


def test_overrides_change_only_what_they_name() -> None:
    sizes = sizes_from(args(quick=True, periods=500, spinners=0, rounds=3))
    assert (sizes.workload.periods, sizes.spinners, sizes.rounds) == (500, 0, 3)
    assert sizes.workload.job_ms == QUICK.workload.job_ms


@pytest.mark.parametrize("text", ["0", "-4"])
def test_a_count_must_be_positive(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a positive integer"):
        positive(text)
    assert positive("7") == 7


@pytest.mark.parametrize("text", ["0.5", "0", "-8", "nan"])
def test_a_time_scale_is_one_or_more(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a time scale"):
        slower(text)
    assert slower("8") == 8.0
    assert slower("1") == 1.0
