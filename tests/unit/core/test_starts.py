"""The rule for a container not seen to start: what holds its CPUs and what gives them back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpuset_core import RuntimeState, StartOutcome, StartReport, judge_start
from cpuset_core.starts import NOT_RUNNING_REASONS

GRACE = 120.0
states = st.sampled_from([None, *RuntimeState])
ages = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)


@pytest.mark.parametrize(("state", "age", "outcome", "reason"), [
    (RuntimeState.EXITED, 0.5, StartOutcome.HOLDS_NOTHING, "start-failed"),
    (RuntimeState.UNKNOWN, 0.5, StartOutcome.HOLDS_NOTHING, "state-unknown"),
    (RuntimeState.CREATED, 0.0, StartOutcome.WAITING, ""),
    (RuntimeState.CREATED, GRACE - 0.001, StartOutcome.WAITING, ""),
    (RuntimeState.CREATED, GRACE, StartOutcome.HOLDS_NOTHING, "not-started"),
    (RuntimeState.CREATED, 10 * GRACE, StartOutcome.HOLDS_NOTHING, "not-started"),
    (RuntimeState.RUNNING, 10 * GRACE, StartOutcome.RUNNING, ""),
    (None, 10 * GRACE, StartOutcome.WAITING, ""),
])
def test_the_runtime_state_and_the_age_decide(state: RuntimeState | None, age: float,
                                              outcome: StartOutcome, reason: str) -> None:
    verdict = judge_start(StartReport(state=state, age=age), grace=GRACE)
    assert (verdict.outcome, verdict.reason) == (outcome, reason)


def test_a_failed_start_says_what_the_runtime_said() -> None:
    verdict = judge_start(StartReport(
        state=RuntimeState.EXITED, detail='StartError: exec: "/nonexistent": no such file'),
        grace=GRACE)
    assert verdict.why == ('exited without running: its start failed (StartError: exec: '
                           '"/nonexistent": no such file)')


def test_a_container_not_started_in_time_is_told_with_its_age_and_the_grace() -> None:
    verdict = judge_start(StartReport(state=RuntimeState.CREATED, age=130.4), grace=120)
    assert verdict.why == "created 130 s ago and not started within the 120 s grace"


@given(state=states, age=ages)
def test_tasks_in_its_cgroup_keep_its_cpus_whatever_the_runtime_says(
        state: RuntimeState | None, age: float) -> None:
    verdict = judge_start(StartReport(state=state, age=age, has_tasks=True), grace=GRACE)
    # Being created (runc's init waits in the cgroup) is not running: only the runtime's word
    # ends the wait; but nothing is given back while processes sit on those CPUs.
    expected = StartOutcome.RUNNING if state is RuntimeState.RUNNING else StartOutcome.WAITING
    assert verdict.outcome is expected


@given(state=states, age=ages, older=ages)
def test_once_it_holds_nothing_it_holds_nothing_when_older(
        state: RuntimeState | None, age: float, older: float) -> None:
    young = judge_start(StartReport(state=state, age=age), grace=GRACE)
    old = judge_start(StartReport(state=state, age=age + older), grace=GRACE)
    if young.outcome is StartOutcome.HOLDS_NOTHING:
        assert old.outcome is StartOutcome.HOLDS_NOTHING


@given(state=states, age=ages)
def test_only_a_runtime_that_lists_it_can_take_its_cpus(state: RuntimeState | None,
                                                        age: float) -> None:
    verdict = judge_start(StartReport(state=state, age=age), grace=GRACE)
    if state is None:
        assert verdict.outcome is StartOutcome.WAITING
    if verdict.outcome is StartOutcome.HOLDS_NOTHING:
        assert verdict.reason in NOT_RUNNING_REASONS
        assert verdict.why
    else:
        assert verdict.reason == ""
