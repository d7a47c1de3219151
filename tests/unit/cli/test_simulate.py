"""``nri-cpuset simulate``: the trace format, every bad-input path, the output formats, and each
metric on hand-built traces whose right value is obvious."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import placement_quality
from cpuset_cli.commands.simulate import make_simulate, simulate
from cpuset_cli.simulate import (
    AddEvent,
    DelEvent,
    Placed,
    Rejected,
    TraceError,
    parse_trace,
    read_trace,
    replay,
)
from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    CPUSet,
    CpusetEngine,
    Ledger,
    PodFacts,
    Settings,
    Topology,
)
from cpuset_lab.machines import (
    BIG_1024,
    DUAL_SOCKET_HT,
    EPYC_LIKE,
    MachineShape,
    build_topology,
)

# DUAL_SOCKET_HT: 16 CPUs, NUMA node 0 = 0-3,8-11, node 1 = 4-7,12-15, siblings n and n+8,
# one L3 group per node.
DUAL = build_topology(DUAL_SOCKET_HT)
# EPYC_LIKE: 32 CPUs, 2 NUMA nodes of 2 L3 groups of 4 cores: L3 0-3,16-19 / 4-7,20-23 / …
EPYC = build_topology(EPYC_LIKE)


def add(ident: int, request: int | None = None, pinned: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"op": "add", "id": ident}
    if request is not None:
        event["request"] = request
    if pinned is not None:
        event["pinned"] = pinned
    return event


def delete(ident: int) -> dict[str, Any]:
    return {"op": "del", "id": ident}


def trace(*events: dict[str, Any]) -> dict[str, Any]:
    return {"events": list(events)}


def run(topology: Topology, *events: dict[str, Any]) -> placement_quality.Metrics:
    return replay(topology, parse_trace(trace(*events))).metrics


def invoke(tmp_path: Path, document: object, *args: str,
           topology: Topology = DUAL) -> tuple[int, str, str]:
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(document if isinstance(document, str) else json.dumps(document))
    command = make_simulate(lambda _path: StaticTopologySource(topology))
    result = CliRunner().invoke(command, ["--topology", str(tmp_path / "machine.json"),
                                          "--trace", str(trace_file), *args])
    return result.exit_code, result.stdout, result.stderr


# -- the trace format --------------------------------------------------------------------------


def test_a_trace_parses_into_add_and_del_events() -> None:
    events = parse_trace(trace(add(7, 4), add(8, 2, "0-1"), add(9, pinned="3"), delete(7),
                               add(7, 1)))
    assert events == (AddEvent(0, 7, 4), AddEvent(1, 8, 2, CPUSet.parse("0-1")),
                      AddEvent(2, 9, None, CPUSet.parse("3")), DelEvent(3, 7), AddEvent(4, 7, 1))
    assert [e.integer for e in events if isinstance(e, AddEvent)] == [True, False, False, True]


def test_an_id_may_be_reused_after_its_del_and_a_rejected_add_may_be_deleted() -> None:
    events = parse_trace(trace(add(1, 99), delete(1), add(1, 2)))
    result = replay(DUAL, events)
    assert result.results == (Rejected(1, "insufficient-cpus", result.results[0].detail),
                              Placed(1, "0,8"))


BAD_TRACES = [
    ([1, 2], None, "the top level must be an object"),
    ({}, None, 'missing "events"'),
    ({"events": {}}, None, '"events" must be a list'),
    ({"events": [], "machine": "x"}, None, "unknown top-level key(s) 'machine'"),
    (trace(add(1, 2), delete(2)), 1, "del of unknown id 2"),
    (trace(add(1, 2), delete(1), delete(1)), 2, "del of unknown id 1"),
    (trace(add(1, 2), add(1, 4)), 1, "duplicate id 1"),
    (trace(add(1, 2, "0,,1")), 0, "bad \"pinned\" list '0,,1': empty element at position 2"),
    (trace(add(1, 2, "0-x")), 0, "bad \"pinned\" list"),
    (trace({"op": "add", "id": 1, "pinned": [0, 1]}), 0, '"pinned" must be a CPU list string'),
    (trace({"id": 1, "request": 2}), 0, 'missing "op"'),
    (trace({"op": "add", "request": 2}), 0, 'missing "id"'),
    (trace({"op": "add", "id": 1}), 0, 'missing "request"'),
    (trace({"op": "del"}), 0, 'missing "id"'),
    (trace({"op": "move", "id": 1}), 0, "unknown op 'move'"),
    (trace({"op": "add", "id": 1, "request": 2, "cpus": 2}), 0, "unknown key(s) 'cpus'"),
    (trace(add(1, 2), {"op": "del", "id": 1, "request": 2}), 1, "unknown key(s) 'request'"),
    (trace({"op": "add", "id": "7", "request": 2}), 0, '"id" must be an integer, not a string'),
    (trace({"op": "add", "id": -1, "request": 2}), 0, '"id" must be at least 0'),
    (trace({"op": "add", "id": 1, "request": True}), 0, '"request" must be an integer, not a '
                                                        "boolean"),
    (trace({"op": "add", "id": 1, "request": 1.5}), 0, '"request" must be an integer'),
    (trace(add(1, 0)), 0, '"request" must be at least 1, got 0'),
    (trace(add(1, 2), "add"), 1, "an event must be an object"),
]


@pytest.mark.parametrize(("document", "index", "message"), BAD_TRACES)
def test_bad_traces_are_errors_naming_the_event(document: object, index: int | None,
                                                message: str) -> None:
    with pytest.raises(TraceError) as caught:
        parse_trace(document, source="t.json")
    assert caught.value.index == index
    assert message in str(caught.value)
    prefix = "t.json: " if index is None else f"t.json: event {index}: "
    assert str(caught.value).startswith(prefix)


@pytest.mark.parametrize(("document", "index", "message"), BAD_TRACES)
def test_the_command_exits_2_with_one_line_naming_the_file_and_event(
        tmp_path: Path, document: object, index: int | None, message: str) -> None:
    code, out, err = invoke(tmp_path, document)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    where = f"{tmp_path / 'trace.json'}: " + ("" if index is None else f"event {index}: ")
    assert err.startswith(f"error: {where}")
    assert message in err
    assert "Traceback" not in err


def test_a_trace_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    code, _out, err = invoke(tmp_path, '{"events": [\n  {"op": "add",}\n]}')
    assert code == 2
    assert "trace.json: not JSON:" in err
    assert "line 2" in err


def test_a_trace_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    trace_file.write_bytes(b'{"events": ["\xff"]}')
    command = make_simulate(lambda _path: StaticTopologySource(DUAL))
    result = CliRunner().invoke(command, ["--topology", "x", "--trace", str(trace_file)])
    assert result.exit_code == 2
    assert "is not UTF-8 text" in result.stderr


def test_a_missing_trace_file_is_exit_2(tmp_path: Path) -> None:
    command = make_simulate(lambda _path: StaticTopologySource(DUAL))
    result = CliRunner().invoke(command, ["--topology", "x", "--trace",
                                          str(tmp_path / "none.json")])
    assert result.exit_code == 2
    assert "none.json: cannot be read" in result.stderr


def test_read_trace_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace(add(1, 2), delete(1))))
    assert read_trace(path) == (AddEvent(0, 1, 2), DelEvent(1, 1))


# -- output formats ----------------------------------------------------------------------------


def test_json_has_one_result_per_add_in_order_and_the_metrics(tmp_path: Path) -> None:
    code, out, err = invoke(tmp_path, trace(add(7, 4), add(8, 2, "0-1"), delete(7),
                                            add(9, 99), add(10, 2)), "-o", "json")
    assert code == 0, err
    document = json.loads(out)
    assert set(document) == {"schema", "results", "metrics"}
    assert document["schema"] == 1
    # 7 takes two whole cores of node 0; the pin on 0-1 moves it; 9 cannot fit.
    assert document["results"] == [
        {"id": 7, "cpus": "0-1,8-9"},
        {"id": 8, "cpus": "0-1"},
        {"id": 9, "error": "insufficient-cpus"},
        {"id": 10, "cpus": document["results"][3]["cpus"]},
    ]
    assert set(document["metrics"]) == {
        "events", "requests", "admitted", "rejected", "threads_per_core", "numa_confined",
        "whole_core", "l3_confined", "split_cores", "failures_with_free_cpus", "decision_ms"}
    assert document["metrics"]["numa_confined"] == {"met": 2, "eligible": 2, "percent": 100.0}
    assert set(document["metrics"]["decision_ms"]) == {"count", "p50", "p99", "max"}
    assert set(document["metrics"]["split_cores"]) == {"time_average", "max"}


def test_the_table_shows_every_add_and_every_metric(tmp_path: Path) -> None:
    code, out, _err = invoke(tmp_path, trace(add(7, 4), add(8, 2, "0-1"), add(9, 99)))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["event", "id", "asks", "cpus", "/", "result"]
    assert lines[1].split() == ["0", "7", "4", "CPUs", "0-1,8-9"]
    assert lines[2].split() == ["1", "8", "pinned", "0-1", "0-1"]
    assert "REJECTED insufficient-cpus: needs 99 exclusive CPU(s)" in lines[3]
    for name in ("NUMA-confined", "L3-confined", "whole-core", "split cores",
                 "failures with free CPUs", "decision time"):
        assert name in out
    assert "p50" in out
    assert "p99" in out
    assert "\x1b[" not in out  # no escape codes when stdout is not a terminal


def test_no_progress_bar_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    events = [add(n, 1) for n in range(50)]
    _code, _out, err = invoke(tmp_path, trace(*events))
    assert err == ""


def test_the_progress_display_replays_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    from cpuset_cli.commands.simulate import _replay_with_progress

    events = parse_trace(trace(add(1, 2), add(2, 3), delete(1)))
    assert _replay_with_progress(DUAL, events, Settings()).results == replay(DUAL, events).results


def test_an_empty_trace_gives_empty_results_and_null_percentages(tmp_path: Path) -> None:
    code, out, _err = invoke(tmp_path, trace(), "-o", "json")
    assert code == 0
    document = json.loads(out)
    assert document["results"] == []
    assert document["metrics"]["numa_confined"]["percent"] is None
    assert document["metrics"]["decision_ms"] == {"count": 0, "p50": None, "p99": None,
                                                  "max": None}
    code, out, _err = invoke(tmp_path, trace())
    assert code == 0
    assert "no decision" in out


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


# -- the metrics module on its own -------------------------------------------------------------


def test_recorder_counts_spanning_and_split_placements_against_the_policy() -> None:
    recorder = placement_quality.QualityRecorder(DUAL)
    everything = DUAL.online
    recorder.request(2, everything, CPUSet((0, 4)))   # two nodes, two half cores
    recorder.request(2, everything, CPUSet((1, 9)))   # one node, one whole core
    recorder.request(4, everything, None)             # rejected with 16 free
    recorder.request(20, everything, None)            # rejected, could not fit
    summary = recorder.summary()
    assert summary.numa_confined == placement_quality.Ratio(1, 2, 50.0)
    assert summary.whole_core == placement_quality.Ratio(1, 2, 50.0)
    assert summary.failures_with_free_cpus == 1
    assert (summary.requests, summary.admitted, summary.rejected) == (4, 2, 2)


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([5.0], 50, 5.0), ([1.0, 2.0, 3.0, 4.0], 50, 2.0), ([1.0, 2.0, 3.0, 4.0], 99, 4.0),
    ([4.0, 1.0, 3.0, 2.0], 100, 4.0), (list(map(float, range(1, 101))), 99, 99.0),
])
def test_percentile_is_nearest_rank(values: list[float], q: float, expected: float) -> None:
    assert placement_quality.percentile(values, q) == expected


def test_percentile_refuses_no_values_and_bad_ranks() -> None:
    with pytest.raises(ValueError, match="no values"):
        placement_quality.percentile([], 50)
    with pytest.raises(ValueError, match="outside"):
        placement_quality.percentile([1.0], 0)


def test_threads_per_core_is_the_largest_online_core() -> None:
    shape = MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=2, threads_per_core=2,
                         offline=CPUSet((3,)))
    domains = placement_quality.Domains(build_topology(shape))
    assert domains.threads_per_core == 2
    assert domains.whole_cores(CPUSet((1,)))  # core 1/3 has only CPU 1 online


def _split_from_scratch(topology: Topology, ledger: Ledger) -> int:
    count = 0
    for core in topology.cores:
        owners = {ledger.int_owner.get(cpu)
                  or (placement_quality.PINNED_OWNER if cpu in ledger.pinned else None)
                  for cpu in core & topology.online}
        count += len(owners - {None}) > 1
    return count


def test_the_split_core_tracker_agrees_with_a_full_recount_on_a_random_mix() -> None:
    rng = random.Random(11)
    engine = CpusetEngine(EPYC)
    tracker = placement_quality.SplitCoreTracker(EPYC)
    live: list[str] = []
    for n in range(300):
        before = engine.ledger
        if live and rng.random() < 0.4:
            cid = live.pop(rng.randrange(len(live)))
            engine.commit(engine.plan_release(cid))
            tracker.assign(placement_quality.owner_changes(before, engine.ledger))
        else:
            cid = f"c{n}"
            if rng.random() < 0.2:
                first = rng.randrange(31)
                pod = PodFacts(sandbox_id=cid, namespace="t", name=cid,
                               annotations={"weka.io/cores-ids": f"{first}-{first + 1}"})
                facts = ContainerFacts(id=cid, sandbox_id=cid, name="c")
            else:
                pod = PodFacts(sandbox_id=cid, namespace="t", name=cid,
                               cgroup_parent=f"/kubepods/pod{cid}")
                request = rng.randint(1, 5)
                facts = ContainerFacts(id=cid, sandbox_id=cid, name="c",
                                       cpu_quota=request * 100_000, cpu_period=100_000)
            try:
                plan = engine.plan_create(pod, facts)
            except AdmissionError:  # a full machine: this add is skipped
                continue
            engine.commit(plan)
            live.append(cid)
            tracker.assign(placement_quality.owner_changes(before, engine.ledger,
                                                 (m.previous_cpus | m.cpus for m in plan.moves)))
        assert tracker.count == _split_from_scratch(EPYC, engine.ledger)


# -- on real files, through the composition root -----------------------------------------------


def test_simulate_reads_a_real_topology_file(tmp_path: Path) -> None:
    from cpuset_adapters.topology_file_writer import write_topology

    write_topology(EPYC, tmp_path / "epyc.json")
    (tmp_path / "trace.json").write_text(json.dumps(trace(add(1, 8), add(2, 4, "0-3"))))
    result = CliRunner().invoke(simulate, ["--topology", str(tmp_path / "epyc.json"),
                                           "--trace", str(tmp_path / "trace.json"), "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["results"][1] == {"id": 2, "cpus": "0-3"}
    assert document["metrics"]["l3_confined"]["percent"] == 100.0


def test_a_bad_topology_file_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"cpus": {"0": {"socket": 0, "core": 0}}}')
    (tmp_path / "trace.json").write_text(json.dumps(trace()))
    result = CliRunner().invoke(simulate, ["--topology", str(tmp_path / "bad.json"),
                                           "--trace", str(tmp_path / "trace.json")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {tmp_path / 'bad.json'}")
    assert "numa" in result.stderr
    assert "Traceback" not in result.output


def test_config_file_sets_the_allocation_options(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[cpus]\nfull_physical_cores = true\n")
    document = trace(add(1, 3), add(2, 2))
    code, out, _err = invoke(tmp_path, document, "--config", str(config), "-o", "json")
    assert code == 0
    results = json.loads(out)["results"]
    assert results[0]["error"] == "full-cores-unavailable"
    assert results[1]["cpus"] == "0,8"
    code, out, _err = invoke(tmp_path, document, "-o", "json")
    assert json.loads(out)["results"][0]["cpus"] == "0-1,8"


def test_an_invalid_config_file_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[cpus]\nnuma_spanning = "wide"\n')
    code, _out, err = invoke(tmp_path, trace(add(1, 1)), "--config", str(config))
    assert code == 2
    assert "cpus.numa_spanning" in err
