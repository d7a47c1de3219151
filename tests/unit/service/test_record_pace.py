"""The record pace (issue 45): on a runtime whose NRI locks cannot deadlock, the runtime's
records go in calls of the plugin's own only when no creation or start is under way and the
runtime has been quiet; asked again before every call. Driven by a fake clock."""

from __future__ import annotations

from cpuset_service.record_pace import HOLD_LIMIT, RECORD_QUIET, RecordPace


class Runtime:
    """What the pace is wired to: a clock, the runtime's last call, the containers waiting for
    their start."""

    def __init__(self) -> None:
        self.now = 100.0
        self.last_call = 0.0
        self.waiting: set[str] = set()

    def pace(self) -> RecordPace:
        pace = RecordPace()
        pace.clock = lambda: self.now
        pace.quiet_for = lambda: self.now - self.last_call
        pace.waiting = lambda: frozenset(self.waiting)
        return pace

    def call(self, *, created: str = "", started: str = "") -> None:
        """The runtime calls the plugin (an event answered now)."""
        self.last_call = self.now
        if created:
            self.waiting.add(created)
        if started:
            self.waiting.discard(started)


def test_records_may_go_when_nothing_waits_for_its_start_and_the_runtime_is_quiet() -> None:
    runtime = Runtime()
    assert runtime.pace().may_send()


def test_an_unwired_pace_always_lets_records_go() -> None:
    assert RecordPace().may_send()


def test_a_creation_holds_the_records_back_until_its_start_and_a_quiet_spell_after_it(
        ) -> None:
    runtime = Runtime()
    pace = runtime.pace()
    runtime.call(created="int")
    runtime.now += RECORD_QUIET * 4  # runc creates the task: quiet, but the start is to come
    assert pace.holding()
    assert not pace.may_send()
    runtime.call(started="int")  # StartContainer: its task starts, PostStartContainer follows
    assert not pace.holding()
    assert not pace.may_send()
    runtime.now += RECORD_QUIET
    assert pace.may_send()


def test_a_lifecycle_event_during_the_catch_up_makes_the_next_call_wait_again() -> None:
    runtime = Runtime()
    pace = runtime.pace()
    assert pace.may_send()  # one call goes
    runtime.now += 0.05
    runtime.call()  # e.g. a StopContainer the plugin answers
    assert not pace.may_send()
    runtime.now += RECORD_QUIET / 2
    assert not pace.may_send()
    runtime.now += RECORD_QUIET / 2
    assert pace.may_send()


def test_a_container_that_never_starts_holds_the_records_back_at_most_the_hold_limit() -> None:
    runtime = Runtime()
    pace = runtime.pace()
    runtime.call(created="stuck")
    assert not pace.may_send()  # first seen waiting now
    runtime.now += HOLD_LIMIT - 0.01
    assert pace.holding()
    runtime.now += 0.01
    assert not pace.holding()
    assert pace.may_send()
    runtime.call(created="next")  # a later creation holds them again, for its own limit
    runtime.now += RECORD_QUIET
    assert pace.holding()


def test_a_reset_forgets_what_waited_and_what_was_starting() -> None:
    runtime = Runtime()
    pace = runtime.pace()
    runtime.call(created="old")
    assert pace.holding()
    runtime.now += HOLD_LIMIT
    assert not pace.holding()
    pace.starting("other")
    pace.reset()  # the connection went; after the rebuild it waits afresh
    assert pace.holding()
    runtime.waiting.clear()
    assert not pace.holding()  # "other" was forgotten


def test_where_the_runtime_says_when_a_start_has_gone_by_the_records_wait_for_it() -> None:
    runtime = Runtime()
    pace = runtime.pace()
    runtime.call(created="int")
    runtime.call(started="int")
    pace.starting("int")  # StartContainer, with PostStartContainer subscribed
    runtime.now += RECORD_QUIET * 4  # a slow runc start: quiet, but the start is not over
    assert pace.holding()
    runtime.call()
    pace.started("int")  # PostStartContainer
    assert not pace.holding()
    runtime.now += RECORD_QUIET
    assert pace.may_send()


def test_a_start_whose_post_start_never_comes_holds_them_back_at_most_the_hold_limit() -> None:
    runtime = Runtime()
    pace = runtime.pace()
    pace.starting("lost")
    runtime.now += HOLD_LIMIT - 0.01
    assert pace.holding()
    runtime.now += 0.01
    assert not pace.holding()
    runtime.now += HOLD_LIMIT
    assert not pace.holding()  # forgotten, not held again
