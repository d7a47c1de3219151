"""The soak's history (``cpuset_soak/history.py``): what a run writes reads back as the
same steps, and a file that cannot be replayed is refused naming the line; the walk is the
same for the same seed."""

from __future__ import annotations

import io
import json

import pytest

from cpuset_soak.history import Header, HistoryError, HistoryWriter, ops_of, parse
from cpuset_soak.walk import Walk
from tests.unit.soak.soak_fixtures import TWO, node_with

HEADER = Header(seed=7, runtime="1.7", online="0-1", minutes=2.0)


def test_a_written_history_reads_back_as_the_same_steps() -> None:
    out = io.StringIO()
    writer = HistoryWriter(out, HEADER)
    writer.write(1, {"kind": "create", "pod": "p1", "type": "shared"})
    writer.write(1, {"kind": "plugin-kill"})
    writer.write(3, {"kind": "delete", "pod": "p1"})
    header, steps = parse(out.getvalue().splitlines())
    assert header == HEADER
    assert [(s.number, [op["kind"] for op in s.ops]) for s in steps] == [
        (1, ["create", "plugin-kill"]), (3, ["delete"])]
    assert [n for n, _ in ops_of(steps)] == [1, 1, 3]


def test_each_operation_is_stamped_with_when_it_ran_and_old_histories_still_replay() -> None:
    out = io.StringIO()
    writer = HistoryWriter(out, HEADER)
    first = writer.write(1, {"kind": "plugin-kill"})
    writer.began -= 12.34  # the run began 12.34 s earlier than it did
    second = writer.write(2, {"kind": "plugin-kill"})
    stamps = [json.loads(line).get("at") for line in out.getvalue().splitlines()[1:]]
    assert stamps == [first, second]
    assert second - first >= 12.3
    unstamped = [HEADER.to_json(), '{"step": 1, "op": {"kind": "plugin-kill"}}']
    assert [s.number for s in parse(unstamped)[1]] == [1]


@pytest.mark.parametrize(("lines", "message"), [
    ([], "empty (no header line)"),
    (['{"soak": 9, "seed": 1}'], "not a soak history of format 1"),
    ([HEADER.to_json(), "{not json"], "history:2: not JSON"),
    ([HEADER.to_json(), '{"step": 1, "op": {}}'], "history:2: expected"),
    ([HEADER.to_json(), '{"step": 2, "op": {"kind": "a"}}', '{"step": 1, "op": {"kind": "b"}}'],
     "history:3: step 1 after step 2"),
])
def test_a_history_that_cannot_be_replayed_is_refused_naming_the_line(
        lines: list[str], message: str) -> None:
    with pytest.raises(HistoryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(lines)


def test_the_same_seed_walks_the_same_steps() -> None:
    first, second = Walk(11, node_with(TWO)), Walk(11, node_with(TWO))
    assert [first.step() for _ in range(30)] == [second.step() for _ in range(30)]
    assert [Walk(12, node_with(TWO)).step() for _ in range(30)] != [
        Walk(11, node_with(TWO)).step() for _ in range(30)]
