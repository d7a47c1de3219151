"""``nri-cpuset simulate``'s trace format: parsing add and del events, and every bad-input path
(bad documents, not JSON, not UTF-8, a missing file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli.commands.simulate import make_simulate
from cpuset_cli.simulate import Placed, Rejected, replay
from cpuset_cli.trace import AddEvent, DelEvent, TraceError, parse_trace, read_trace
from cpuset_core import CPUSet
from tests.unit.cli.simulate_traces import DUAL, add, delete, invoke, trace

# -- the trace format --------------------------------------------------------------------------


def test_a_trace_parses_into_add_and_del_events() -> None:
    events = parse_trace(trace(add(7, 4), add(8, 2, "0-1"), add(9, pinned="3"), delete(7),
                               add(7, 1)))
    assert events == (AddEvent(0, 7, 4), AddEvent(1, 8, 2, CPUSet.parse("0-1")),
                      AddEvent(2, 9, None, CPUSet.parse("3")), DelEvent(3, 7), AddEvent(4, 7, 1))
    assert [e.integer for e in events if isinstance(e, AddEvent)] == [True, False, False, True]


def test_an_add_with_devices_is_placed_on_their_numa_node() -> None:
    events = parse_trace(trace(add(1, 2), {"op": "add", "id": 2, "request": 2, "devices": "1"}))
    assert events[1] == AddEvent(1, 2, 2, None, CPUSet.parse("1"))
    placed = replay(DUAL, events).results
    assert placed[0] == Placed(1, "0,8")  # node 0 first, as always
    assert isinstance(placed[1], Placed)
    assert DUAL.numa_nodes_of(CPUSet.parse(placed[1].cpus)) == CPUSet.parse("1")


def test_an_id_may_be_reused_after_its_del_and_a_rejected_add_may_be_deleted() -> None:
    events = parse_trace(trace(add(1, 99), delete(1), add(1, 2)))
    result = replay(DUAL, events)
    assert result.results == (Rejected(1, "insufficient-cpus", result.results[0].detail),
                              Placed(1, "0,8"))


def test_workload_requests_replay_as_on_a_node() -> None:
    mixed = {"mixed-cpus.nri-cpuset.io/pod": "true"}
    events = parse_trace(trace(
        {"op": "add", "id": 1, "millis": 2500, "annotations": mixed},
        {"op": "add", "id": 2, "request": 2,
         "annotations": {"shared-cpus.nri-cpuset.io/pod": "true"}},
        {"op": "add", "id": 3, "request": 1, "namespace": "kube-system",
         "annotations": {"reserved-cpus.nri-cpuset.io/pod": "yes"}},
        add(4, 2)))
    assert events[0] == AddEvent(0, 1, None, millis=2500, annotations=mixed)
    result = replay(DUAL, events)
    mixed_placed, opted_out, refused, plain = result.results
    assert isinstance(mixed_placed, Placed)
    assert mixed_placed.cpus == "0-15"  # two of its own and the pool
    assert opted_out == Placed(2, "1-7,9-15")  # the pool, without the mixed one's 0,8
    assert isinstance(refused, Rejected)
    assert refused.error == "invalid-annotation"
    assert isinstance(plain, Placed)
    # Quality counts requests for exclusive CPUs alone: not the mixed, the opted-out or the
    # badly annotated one.
    assert result.metrics.requests == 1


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
    (trace({"op": "add", "id": 1}), 0, 'missing "request" (the number of exclusive CPUs) or '
                                       '"millis"'),
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
    (trace({"op": "add", "id": 1, "request": 2, "millis": 2500}), 0,
     '"millis" is a CPU limit given instead of "request"'),
    (trace({"op": "add", "id": 1, "millis": 0}), 0, '"millis" must be at least 1'),
    (trace({"op": "add", "id": 1, "request": 2, "namespace": ""}), 0,
     '"namespace" must be a non-empty string'),
    (trace({"op": "add", "id": 1, "request": 2, "annotations": {"a": 1}}), 0,
     '"annotations" must be an object of strings'),
    (trace({"op": "add", "id": 1, "request": 2, "devices": 1}), 0,
     '"devices" must be a NUMA node list string like "0-1,8", not an integer 1'),
    (trace({"op": "add", "id": 1, "request": 2, "devices": "1-"}), 0,
     "bad \"devices\" list '1-': empty range end at position 2"),
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
