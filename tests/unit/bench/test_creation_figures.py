"""The creation bench's figures (``bench/creation_figures.py``), its order of samples, its
command line and how it counts the overlap (``bench/dense_node.py``)."""

from __future__ import annotations

import argparse

import pytest
from creation import parse, sizes
from creation_figures import (
    PHASES,
    Creation,
    difference_interval,
    hook_ms,
    hook_text,
    interleaved,
    named_p50s,
    phase_rows,
    sample_line,
    spread,
    switch_line,
)
from dense_node import overlap

from cpuset_core.cpuset import CPUSet


def creation(runp_ms: float, create_ms: float, start_ms: float, sharing: int = 0) -> Creation:
    return Creation(runp_ms / 1000, create_ms / 1000, start_ms / 1000, sharing)


def test_a_creations_total_is_its_three_calls() -> None:
    assert creation(100, 20, 30).total == pytest.approx(0.150)


def test_spread_gives_the_median_and_range_in_ms() -> None:
    assert spread([0.030, 0.010, 0.020]) == "p50   20.0 ms (10.0-30.0)"


def test_spread_beside_a_floor_adds_the_difference_of_the_medians() -> None:
    assert spread([0.030, 0.040], [0.010, 0.020]) == "p50   35.0 ms (30.0-40.0)  +20.0"
    assert spread([0.010], [0.020]).endswith(" -10.0")


def test_each_phase_has_a_row_with_both_plugins_and_the_difference() -> None:
    noop = [creation(100, 20, 30, sharing=40), creation(110, 22, 32, sharing=40)]
    plugin = [creation(108, 30, 31), creation(110, 32, 33)]
    rows = phase_rows(40, "no-op", noop, "nri-cpuset", plugin)
    assert len(rows) == len(PHASES) + 1
    for phase, row in zip(PHASES, rows[:-1], strict=True):
        assert row.startswith(f"[  40] {phase} ")
        assert "no-op" in row
        assert "nri-cpuset" in row
    assert "nri-cpuset p50  109.0 ms (108.0-110.0)   +4.0  (95% " in rows[0]
    assert " +10.0  (95% " in rows[1]  # create: 31 against 21 ms
    assert "p50  172.0 ms (169.0-175.0)  +15.0  (95% " in rows[3]  # total: 172 against 157
    assert rows[-1] == ("[  40] shared containers on its CPUs when its start returned, max: "
                        "no-op 40, nri-cpuset 0 (of 40)")


def test_rows_need_samples_of_both() -> None:
    with pytest.raises(ValueError, match="no samples"):
        phase_rows(20, "no-op", [], "nri-cpuset", [creation(1, 1, 1)])
    with pytest.raises(ValueError, match="no samples"):
        phase_rows(20, "no-op", [creation(1, 1, 1)], "nri-cpuset", [])


def test_samples_alternate_in_pairs_whose_order_flips() -> None:
    assert interleaved(("a", "b"), 3) == ["a", "b", "b", "a", "a", "b"]
    assert interleaved(("a", "b"), 0) == []


def test_a_sample_line_gives_each_phase_in_ms() -> None:
    assert sample_line(500, 3, "no-op", creation(100, 20.5, 30, sharing=500)) == (
        "[ 500] #3  no-op      runp  100.0  create   20.5  start   30.0  total  150.5 ms  "
        "shared on its CPUs 500")
    assert sample_line(500, 0, "nri-cpuset", creation(1, 2, 3)) == (
        "[ 500] --  nri-cpuset runp    1.0  create    2.0  start    3.0  total    6.0 ms  "
        "shared on its CPUs 0  (warm-up after its start, not counted)")


def test_the_switch_line_names_each_plugin_that_started() -> None:
    line = switch_line(200, {"no-op": [0.2, 0.4, 0.3], "nri-cpuset": []})
    assert line == ("[ 200] plugin switches, exec to synchronized p50 / max: "
                    "no-op 0.30 / 0.40 s (n=3)")


def test_overlap_counts_shared_containers_on_the_new_containers_cpus() -> None:
    shared = {"a": CPUSet.parse("0-1"), "b": CPUSet.parse("0"), "c": None}
    assert overlap(shared, CPUSet.parse("1")) == 2  # a, and c, which could not be read
    assert overlap(shared, CPUSet.parse("2")) == 1
    assert overlap(shared, None) == 1  # the new one unreadable: only the unreadable count


def test_quick_is_two_small_sizes_and_two_samples() -> None:
    args = parse(["--quick"])
    assert (args.sizes, args.samples, args.runtime) == ([20, 40], 2, None)
    args = parse(["--sizes", "200,500", "--samples", "5", "--runtime", "2.x"])
    assert (args.sizes, args.samples, args.runtime) == ([200, 500], 5, "2.x")
    assert parse([]).sizes == [200, 500]


@pytest.mark.parametrize("text", ["", "0", "20,x", "-5", "20,,40"])
def test_sizes_are_positive_integers(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="positive integers"):
        sizes(text)


def test_bad_samples_and_runtimes_are_refused() -> None:
    for argv in (["--samples", "0"], ["--runtime", "3.0"]):
        with pytest.raises(SystemExit):
            parse(argv)


def test_hook_ms_is_each_hooks_gain_between_two_readings_in_ms() -> None:
    before = {"CreateContainer": 1.0, "StopContainer": 0.5}
    after = {"CreateContainer": 1.004, "StopContainer": 0.5, "StartContainer": 0.0002}
    gained = hook_ms(before, after)
    assert gained == {"CreateContainer": pytest.approx(4.0), "StartContainer": pytest.approx(0.2)}


def test_hook_text_names_each_hook_sorted_or_says_none() -> None:
    assert hook_text({"StopContainer": 0.25, "CreateContainer": 3.0}) == (
        "CreateContainer 3.0, StopContainer 0.2 ms")
    assert hook_text({}) == "none"


def test_named_p50s_counts_a_sample_without_the_hook_as_zero() -> None:
    text = named_p50s([{"CreateContainer": 4.0}, {"CreateContainer": 2.0, "StopContainer": 1.0},
                      {"CreateContainer": 3.0}])
    assert text == "CreateContainer p50 3.0 (max 4.0), StopContainer p50 0.0 (max 1.0) ms"
    assert named_p50s([]) == "none"


def test_the_interval_holds_the_difference_and_tells_a_shift_from_noise() -> None:
    floor = [0.020 + 0.001 * (i % 7) for i in range(21)]
    shifted = [x + 0.005 for x in floor]
    low, high = difference_interval(floor, shifted)
    assert 0.0 < low <= 5.0 <= high < 10.0  # a 5 ms shift over 6 ms of noise: shown
    same_low, same_high = difference_interval(floor, list(reversed(floor)))
    assert same_low < 0.0 < same_high  # no shift: zero is inside


def test_the_interval_is_the_same_for_the_same_samples() -> None:
    floor, measured = [0.010, 0.030, 0.020], [0.015, 0.040, 0.025]
    assert difference_interval(floor, measured) == difference_interval(floor, measured)
    assert difference_interval([0.010], [0.012]) == pytest.approx((2.0, 2.0))
