"""The operations of containers that never run (``cpuset_soak/failing.py``, ``unstarted.py``)
on fakes, and how the walk schedules their next attempts and fates (``retries.py``)."""

from __future__ import annotations

import pytest

from cpuset_core import CPUSet
from cpuset_soak.dispatch import DISPATCH
from cpuset_soak.failing import FAILED_AS_SAID
from cpuset_soak.history import Op
from cpuset_soak.model import CREATED, EXPIRED, FAILED, INTEGER, RUNNING, SHARED, Grace, Pod
from cpuset_soak.outcomes import failed_as_the_runtime_says
from cpuset_soak.retries import NeverRun
from cpuset_soak.walk import Walk
from tests.unit.soak.fakes import MISSING, FakeClock, Fakes
from tests.unit.soak.soak_fixtures import TWO, node_with

TOO_LATE = ("rpc error: nri-cpuset: default/idle/app: start refused: created 13 s ago and not "
            "started within the 10 s grace, so its CPUs were given back; a new attempt is "
            "placed afresh")
NO_ROOM = ("nri-cpuset: default/bad/app: needs 1 exclusive CPU(s) but only 0 are free (online "
           "minus pinned, exclusive and reserved)")


def _run(fakes: Fakes, *ops: Op) -> None:
    for op in ops:
        DISPATCH[op["kind"]](fakes.parts(), op)


def _failing(pod: str = "bad", kind: str = INTEGER) -> Op:
    return {"kind": "create-failing", "pod": pod, "type": kind, "cpus": 1,
            "namespace": "default"}


def _retry(attempt: int, pod: str = "bad") -> Op:
    return {"kind": "retry-failing", "pod": pod, "type": INTEGER, "cpus": 1,
            "attempt": attempt}


def test_a_failing_pod_fails_as_the_runtime_says_and_then_holds_nothing() -> None:
    fakes = Fakes(node_with(TWO))
    _run(fakes, {"kind": "create", "pod": "web", "type": SHARED, "handler": "",
                 "namespace": "default"}, _failing())
    dead = fakes.model.node.pods["bad"].containers["app"]
    assert (dead.state, dead.kind, dead.cpus) == (FAILED, INTEGER, 1)
    assert fakes.kubelet.calls[-2:] == [("create", "bad/app"), ("start", "bad-app")]
    assert fakes.record.found == []
    assert fakes.record.tally.ops[FAILED_AS_SAID] == 1
    assert fakes.model.node.exclusive_count() == 0


def test_the_next_attempt_is_created_beside_the_last_dead_instance_only() -> None:
    fakes = Fakes(node_with(TWO))
    _run(fakes, _failing(), _retry(1), _retry(2))
    assert fakes.kubelet.calls[-3:] == [("remove", "bad-app"), ("create", "bad/app#2"),
                                        ("start", "bad-app-2")]
    assert sorted(fakes.kubelet.containers) == ["bad-app-1", "bad-app-2"]
    assert fakes.record.tally.ops[FAILED_AS_SAID] == 3
    assert fakes.record.found == []


def test_an_attempt_refused_for_want_of_room_its_dead_instance_held_is_a_violation() -> None:
    fakes = Fakes(node_with(TWO))
    _run(fakes, {"kind": "create", "pod": "db", "type": INTEGER, "cpus": 1, "handler": "",
                 "namespace": "default"}, _failing())
    fakes.kubelet.refuse["bad/app"] = NO_ROOM  # as if the dead instance still held CPU 1
    _run(fakes, _retry(1))
    assert fakes.record.found == [
        f"bad/app attempt 1 (integer x1) refused with insufficient-cpus, the model expects "
        f"admission: {NO_ROOM}"]  # the dead instance beside it is not 'a refused one left'


def test_a_start_failing_with_the_plugins_refusal_is_a_violation() -> None:
    fakes = Fakes(node_with(TWO))
    fakes.kubelet.refuse_start["bad-app"] = TOO_LATE
    _run(fakes, _failing())
    assert fakes.record.found == [
        f"bad/app attempt 0 (integer) failed to start with the plugin's refusal "
        f"(started-too-late), not the runtime's own error: {TOO_LATE}"]
    assert fakes.model.node.pods["bad"].containers["app"].state == FAILED


@pytest.mark.parametrize(("details", "found"), [
    (MISSING, None),
    (NO_ROOM, "bad/app failed to start with the plugin's refusal (insufficient-cpus)"),
    ("context deadline exceeded", "bad/app failed to start without the runtime's own error"),
    ('exec: "/nonexistent": no such file', "bad/app failed to start without the runtime's"),
    (None, "bad/app started, but its command /nonexistent does not exist"),
])
def test_a_start_that_must_fail_is_judged_by_the_runtimes_own_words(
        details: str | None, found: str | None) -> None:
    fakes = Fakes(node_with(TWO))
    assert failed_as_the_runtime_says("bad/app", details, record=fakes.record) is (
        found is None)
    assert [f[:len(found)] for f in fakes.record.found] == ([found] if found else [])


def _unstarted(fakes: Fakes, kind: str = INTEGER) -> FakeClock:
    clock = FakeClock()
    fakes.model.node.grace, fakes.model.node.clock = Grace(10.0, 2.0, 3.0), clock
    _run(fakes, {"kind": "create-unstarted", "pod": "idle", "type": kind, "cpus": 1,
                 "namespace": "default"})
    return clock


def test_a_created_container_holds_its_cpus_and_starts_within_the_grace() -> None:
    fakes = Fakes(node_with(TWO))
    fakes.plugin.document = {"containers": [{"id": "idle-app", "cpus": "1"}]}
    clock = _unstarted(fakes)
    idle = fakes.model.node.pods["idle"].containers["app"]
    assert (idle.state, idle.actual) == (CREATED, CPUSet([1]))
    assert fakes.model.node.exclusive_count() == 1
    clock.advance(3.0)
    _run(fakes, {"kind": "start-created", "pod": "idle", "late": False})
    assert idle.state == RUNNING
    assert fakes.record.found == []


def test_a_late_start_waits_for_the_cpus_given_back_and_must_be_refused_as_too_late() -> None:
    fakes = Fakes(node_with(TWO))
    clock = _unstarted(fakes)
    clock.advance(10.5)  # past the grace; the fake plugin lists nothing
    fakes.kubelet.refuse_start["idle-app"] = TOO_LATE
    _run(fakes, {"kind": "start-created", "pod": "idle", "late": True})
    assert fakes.model.node.pods["idle"].containers["app"].state == EXPIRED
    assert fakes.record.found == []
    assert fakes.record.tally.refusals == {"started-too-late": 1}


def test_a_late_start_the_plugin_carries_out_is_a_violation() -> None:
    fakes = Fakes(node_with(TWO))
    clock = _unstarted(fakes)
    clock.advance(13.0)
    _run(fakes, {"kind": "start-created", "pod": "idle", "late": True})
    assert fakes.record.found == [
        "idle/app (integer, created) started 13.0 s after its creation, past the 10 s grace "
        "(+3 s): its CPUs were given back, so its start must be refused (started-too-late)"]


def test_a_start_refused_as_too_late_within_the_grace_is_a_violation() -> None:
    fakes = Fakes(node_with(TWO))
    clock = _unstarted(fakes)
    clock.advance(4.0)
    fakes.kubelet.refuse_start["idle-app"] = TOO_LATE
    _run(fakes, {"kind": "start-created", "pod": "idle", "late": False})
    assert len(fakes.record.found) == 1
    assert "refused as started-too-late 4.0 s after its creation, within the 10 s grace" in (
        fakes.record.found[0])


def test_a_plugin_still_holding_a_container_past_its_grace_is_found_before_its_start(
        ) -> None:
    fakes = Fakes(node_with(TWO))
    fakes.plugin.document = {"containers": [{"id": "idle-app", "cpus": "1"}]}
    clock = _unstarted(fakes)
    clock.advance(13.0)
    _run(fakes, {"kind": "start-created", "pod": "idle", "late": True})
    assert fakes.record.found == [
        "idle/app (integer, created) was created 13.0 s ago and never started, yet the plugin "
        "still holds it 3 s after the 10 s grace"]
    assert ("start", "idle-app") not in fakes.kubelet.calls


def test_the_walk_retries_a_failing_pod_after_one_two_four_then_eight_steps() -> None:
    node = node_with(TWO)
    schedule = NeverRun()
    schedule.failed(_failing())
    node.pods["bad"] = Pod(name="bad", namespace="default", qos="Guaranteed")
    due = [step for step in range(1, 40) if schedule.due(node)]
    assert due == [1, 3, 7, 15, 23, 31, 39]
    del node.pods["bad"]
    assert schedule.due(node) == []
    assert schedule.failing == {}


RESTARTS = {"plugin-kill", "plugin-sigstop", "containerd-restart"}


def _restarting(op: Op) -> bool:
    return op["kind"] in RESTARTS or (op["kind"] == "burst" and op["kill_at"] >= 0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_restart_fault_is_drawn_while_a_created_container_waits_for_its_fate(
        seed: int) -> None:
    walk = Walk(seed, node_with(TWO))
    created = 0
    for _ in range(600):
        before = set(walk.never_run.pending)
        ops = walk.step()
        fated = {op["pod"] for op in ops if op["kind"] in ("start-created", "delete")}
        waiting = bool(before - fated)
        for op in ops:
            waiting = waiting or op["kind"] == "create-unstarted"
            assert not (waiting and _restarting(op)), ops
            if op["kind"] == "create-unstarted":
                created += 1
                steps, fate = walk.never_run.pending[op["pod"]]
                assert 1 <= steps <= 3
                assert fate["pod"] == op["pod"]
    assert created > 0
