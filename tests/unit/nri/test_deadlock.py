"""The sign of a deadlocked NRI (decision 51), counted on its own: registrations left
unanswered after a call of the plugin's own was dropped are said once, at WEDGED_AFTER."""

from __future__ import annotations

import logging

import pytest

from cpuset_adapters.nri.deadlock import WEDGED_AFTER, UnansweredRegistrations

WEDGED = "its NRI is most likely deadlocked"


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if WEDGED in r.getMessage()]


def test_unanswered_registrations_after_a_dropped_call_are_said_once(
        caplog: pytest.LogCaptureFixture) -> None:
    count = UnansweredRegistrations()
    count.call_dropped()
    with caplog.at_level(logging.ERROR, logger="nri_cpuset.nri"):
        for _ in range(WEDGED_AFTER - 1):
            count.unanswered()
        assert said(caplog) == []
        for _ in range(WEDGED_AFTER + 2):
            count.unanswered()
    assert len(said(caplog)) == 1


def test_unanswered_registrations_without_a_dropped_call_say_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    count = UnansweredRegistrations()
    with caplog.at_level(logging.ERROR, logger="nri_cpuset.nri"):
        for _ in range(WEDGED_AFTER * 2):
            count.unanswered()
    assert said(caplog) == []


def test_an_answered_registration_stops_the_count(caplog: pytest.LogCaptureFixture) -> None:
    count = UnansweredRegistrations()
    count.call_dropped()
    with caplog.at_level(logging.ERROR, logger="nri_cpuset.nri"):
        for _ in range(WEDGED_AFTER - 1):
            count.unanswered()
        count.answered()
        for _ in range(WEDGED_AFTER * 2):
            count.unanswered()
    assert said(caplog) == []
