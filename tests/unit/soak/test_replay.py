"""``--replay FILE``: a recorded history (the plants' ``failed-shrink.jsonl``,
``failed-starts.jsonl``) is read as the soak reads it, and its operations run, in its steps,
through the same dispatch a walk's do (here handed fakes: the real runtime is the e2e soak's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_core import CPUSet
from cpuset_soak import history
from cpuset_soak.args import parse_args
from cpuset_soak.dispatch import DISPATCH
from cpuset_soak.failing import FAILED_AS_SAID
from cpuset_soak.main import planned
from cpuset_soak.model import Node
from tests.unit.soak.fakes import FakeClock, Fakes

PLANTS = Path(__file__).resolve().parents[3] / "src" / "cpuset_soak" / "plants"
FAILED_SHRINK = PLANTS / "failed-shrink.jsonl"


def test_the_recorded_history_is_read_as_the_soak_replays_it() -> None:
    plan = planned(parse_args(["--replay", str(FAILED_SHRINK)], "soak"))
    assert (plan.seed, plan.runtime) == (0, "1.7")
    assert plan.replayed is not None
    assert [[op["kind"] for op in ops] for ops in plan.replayed] == [
        ["create"], ["runc-refuse", "resize", "create"], ["runc-allow"], ["create"],
        ["delete"]]
    assert {op["kind"] for ops in plan.replayed for op in ops} <= set(DISPATCH)


def test_runtime_given_on_the_command_line_wins_over_the_historys() -> None:
    plan = planned(parse_args(["--replay", str(FAILED_SHRINK), "--runtime", "2.x"], "soak"))
    assert (plan.seed, plan.runtime) == (0, "2.x")


def test_a_walk_is_planned_from_the_seed_given() -> None:
    plan = planned(parse_args(["--seed", "5"], "soak"))
    assert (plan.seed, plan.runtime, plan.replayed) == (5, "1.7", None)


def test_a_history_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "history.jsonl"
    broken.write_text('{"soak": 1, "seed": 0, "runtime": "1.7", "online": "0-1", '
                      '"minutes": 0}\n{"step": 1}\n')
    with pytest.raises(history.HistoryError, match=r"history\.jsonl:2: expected"):
        planned(parse_args(["--replay", str(broken)], "soak"))


def test_the_failed_shrink_runs_its_operations_in_order_through_the_dispatch() -> None:
    header, steps = history.read(FAILED_SHRINK)
    fakes = Fakes(Node(online=CPUSet.parse(header.online)))
    # What the plugin answers on the real runtime: "after" finds both CPUs exclusive.
    fakes.kubelet.refuse["after/app"] = (
        "nri-cpuset: default/after/app: needs 1 exclusive CPU(s) but only 0 are free")
    for step in steps:
        fakes.record.step = step.number
        for op in step.ops:
            DISPATCH[op["kind"]](fakes.parts(), op)
        fakes.model.node.settled()
    assert fakes.kubelet.calls == [
        ("run_pod", "big"), ("create", "big/app"), ("start", "big-app"),
        ("update", "big-app"),  # runc refuses the shrink
        ("run_pod", "next"), ("create", "next/app"), ("start", "next-app"),
        ("run_pod", "after"), ("create", "after/app"),
        ("delete_pod", "big")]
    assert fakes.record.found == []
    assert sorted(fakes.model.node.pods) == ["after", "next"]
    assert fakes.record.tally.refusals == {"insufficient-cpus": 1}
    assert fakes.record.tally.faults == {"runc-refuse": 1}
    assert fakes.runtime.refusing == set()


FAILED_STARTS = PLANTS / "failed-starts.jsonl"


def test_the_failed_starts_history_runs_its_operations_through_the_dispatch() -> None:
    header, steps = history.read(FAILED_STARTS)
    fakes = Fakes(Node(online=CPUSet.parse(header.online)))
    fakes.model.node.clock = FakeClock()
    for step in steps:
        fakes.record.step = step.number
        if step.number == 4:  # idle, created and within its grace, holds the last free CPU
            fakes.kubelet.refuse["bad-a/app"] = (
                "nri-cpuset: default/bad-a/app: shared CPU pool would be empty: 1 shared "
                "container(s) would have no CPU left")
        for op in step.ops:
            if op["kind"] == "start-created":  # its grace has passed; the plugin lists nothing
                fakes.model.node.clock.advance(fakes.model.node.grace.seconds)
                fakes.kubelet.refuse_start["idle-app"] = (
                    "nri-cpuset: default/idle/app: start refused: created 121 s ago and not "
                    "started within the 120 s grace, so its CPUs were given back")
            DISPATCH[op["kind"]](fakes.parts(), op)
        fakes.model.node.settled()
    assert fakes.record.found == []
    assert fakes.record.tally.ops[FAILED_AS_SAID] == 4  # every attempt created
    assert fakes.record.tally.refusals == {"shared-pool-exhausted": 1, "started-too-late": 1}
    assert ("remove", "bad-a-app") in fakes.kubelet.calls  # the oldest dead instance
    assert sorted(fakes.model.node.pods) == ["after", "bad-a", "bad-b", "idle", "web"]
