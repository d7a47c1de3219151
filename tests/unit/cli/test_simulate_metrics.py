"""``nri-cpuset simulate``'s metrics, each on a hand-built trace whose right value is obvious."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

from cpuset_cli import placement_quality
from cpuset_cli.simulate import replay
from cpuset_cli.trace import parse_trace
from cpuset_core import Topology
from cpuset_lab.machines import BIG_1024, build_topology
from tests.unit.cli.simulate_traces import DUAL, EPYC, add, delete, trace


def run(topology: Topology, *events: dict[str, Any]) -> placement_quality.Metrics:
    return replay(topology, parse_trace(trace(*events))).metrics


# -- each metric on traces whose value is obvious ----------------------------------------------


def test_requests_that_fit_a_numa_node_are_confined_and_others_are_not_counted() -> None:
    # 10 CPUs fit no 8-CPU node: not eligible. 3 and 2 then fit node 1: eligible and confined.
    m = run(DUAL, add(1, 10), add(2, 3), add(3, 2))
    assert m.numa_confined == placement_quality.Ratio(met=2, eligible=2, percent=100.0)
    assert m.l3_confined == placement_quality.Ratio(met=2, eligible=2, percent=100.0)


def test_l3_confinement_counts_only_requests_that_fit_an_l3_group() -> None:
    # EPYC_LIKE L3 groups hold 8 CPUs: 6 and 8 fit one, 12 fits only a NUMA node.
    m = run(EPYC, add(1, 6), add(2, 8), add(3, 12))
    assert m.l3_confined == placement_quality.Ratio(met=2, eligible=2, percent=100.0)
    assert m.numa_confined == placement_quality.Ratio(met=3, eligible=3, percent=100.0)


def test_whole_core_counts_even_requests_when_whole_free_cores_exist() -> None:
    # 3 is odd: not eligible. 2 and 4 are, and get whole cores.
    m = run(DUAL, add(1, 3), add(2, 2), add(3, 4))
    assert m.threads_per_core == 2
    assert m.whole_core == placement_quality.Ratio(met=2, eligible=2, percent=100.0)


def test_whole_core_is_not_eligible_without_enough_whole_free_cores() -> None:
    # Pins on 0-7 leave only the threads 8-15, each beside a pinned sibling: no whole core.
    m = run(DUAL, add(1, pinned="0-7"), add(2, 2))
    assert m.whole_core.eligible == 0
    assert m.whole_core.percent is None
    assert m.admitted == 1


def test_split_cores_average_and_max_over_the_states_after_each_event() -> None:
    # 1 takes CPU 0; the pin on its sibling 8 splits core 0/8; the del un-splits it.
    m = run(DUAL, add(1, 1), add(2, pinned="8"), delete(2))
    assert m.split_cores == placement_quality.SplitCores(time_average=round(1 / 3, 3), max=1)
    assert m.events == 3


def test_two_pins_on_one_core_do_not_split_it() -> None:
    m = run(DUAL, add(1, pinned="0"), add(2, pinned="8"))
    assert m.split_cores.max == 0


def test_a_move_changes_owners_without_leaving_stale_splits() -> None:
    # 1 holds core 0/8; the pin on 0 moves it to a whole core elsewhere: nothing is split.
    m = run(DUAL, add(1, 2), add(2, pinned="0"))
    assert m.split_cores.max == 0


def test_rejections_count_as_failures_only_when_enough_cpus_were_free() -> None:
    m = run(DUAL, add(1, 12), add(2, 8))
    assert m.rejected == 1
    assert m.failures_with_free_cpus == 0


def test_decision_time_percentiles_use_the_callers_clock() -> None:
    # Each add reads the clock twice; decisions take 1, 2, 3 and 4 ms.
    durations = iter([1, 2, 3, 4])
    ticks: Iterator[int] = itertools.chain.from_iterable(
        (0, next(durations) * 1_000_000) for _ in range(4))
    events = parse_trace(trace(add(1, 1), add(2, 1), delete(1), add(3, 1), add(4, 1)))
    m = replay(DUAL, events, clock=lambda: next(ticks)).metrics
    assert m.decision_ms == placement_quality.DecisionTimes(count=4, p50=2.0, p99=4.0, max=4.0)


def test_progress_callback_sees_every_event() -> None:
    seen: list[int] = []
    replay(DUAL, parse_trace(trace(add(1, 1), delete(1))), on_event=seen.append)
    assert seen == [1, 2]


def test_a_2000_event_churn_on_1024_cpus_replays_with_sane_metrics() -> None:
    # Scale (issue 4's acceptance): timings are read from the output, never asserted here.
    rng = random.Random(5)
    events: list[dict[str, Any]] = []
    live: dict[int, int] = {}
    used = 0
    for ident in itertools.count():
        if len(events) >= 2000:
            break
        while live and (used > 850 or rng.random() < 0.3):
            gone = rng.choice(sorted(live))
            used -= live.pop(gone)
            events.append(delete(gone))
        request = rng.randint(1, 32)
        live[ident] = request
        used += request
        events.append(add(ident, request))
    m = run(build_topology(BIG_1024), *events[:2000])
    assert m.events == 2000
    assert m.failures_with_free_cpus == 0
    assert m.numa_confined.percent == 100.0
    assert m.decision_ms.count == m.requests
