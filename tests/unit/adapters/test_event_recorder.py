"""The event recorder against the lab's fake API server: the first occurrence is created, a
repeat within the window extends its series, a full queue drops its oldest, and a refusing,
slow or absent server is counted, logged once, retried with back-off and caught up with after
it recovers, nothing ever raised into the caller. The worker is stepped by hand with a fake
clock (``step``), except in the one test of the thread itself."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from cpuset_adapters.kubernetes.api_client import Created, EventsApi
from cpuset_adapters.kubernetes.credentials import Endpoint
from cpuset_adapters.kubernetes.event_object import PlacementEvent, container
from cpuset_adapters.kubernetes.event_recorder import EventRecorder
from tests.support.kube_api import FakeApi, serve

START = 1_795_971_662.0  # 2026-11-29T17:01:02Z
RECORDER = "cpuset_adapters.kubernetes.event_recorder"


class FakeClock:
    """Seconds since the epoch that move only when told, or when waited on."""

    def __init__(self) -> None:
        self.now = START
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def placed(container_name: str = "db", note: str = "cpus 2-3") -> PlacementEvent:
    return PlacementEvent(
        regarding=container(namespace="team-a", pod="db-0", pod_uid="uid-1",
                            name=container_name),
        reason="ExclusiveCpus", action="Placed", note=note)


def endpoint(port: int) -> Endpoint:
    return Endpoint(host="127.0.0.1", port=port, context=None, token=lambda: "t0k",
                    source="test")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with serve() as running:
        yield running


def recorder_for(api: FakeApi, clock: FakeClock, *, capacity: int = 100,
                 timeout: float = 5.0) -> EventRecorder:
    return EventRecorder(EventsApi(endpoint(api.port), timeout=timeout), instance="node-a",
                         capacity=capacity, clock=clock, wait=clock.wait)


def run_until_idle(recorder: EventRecorder, limit: int = 50) -> None:
    for _ in range(limit):
        if not recorder.step():
            return
    raise AssertionError(f"still busy after {limit} steps")


def the_series(api: FakeApi) -> list[tuple[str, int | None]]:
    return [(event["note"], (event.get("series") or {}).get("count"))
            for event in api.events.values()]


def test_the_first_occurrence_is_created_with_the_time_it_was_recorded(
        api: FakeApi, clock: FakeClock) -> None:
    recorder = recorder_for(api, clock)
    recorder.record(placed())
    clock.now += 30  # sent later than it happened
    run_until_idle(recorder)
    [event] = api.events.values()
    assert event["eventTime"] == "2026-11-29T17:01:02.000000Z"
    assert event["reportingInstance"] == "node-a"
    assert recorder.counts().sent == 1
    assert recorder.pending() == 0


def test_repeats_within_the_window_patch_one_event_s_series(api: FakeApi,
                                                            clock: FakeClock) -> None:
    recorder = recorder_for(api, clock)
    for _ in range(3):
        recorder.record(placed())
        run_until_idle(recorder)
        clock.now += 60
    assert the_series(api) == [("cpus 2-3", 3)]
    [event] = api.events.values()
    assert event["series"]["lastObservedTime"] == "2026-11-29T17:03:02.000000Z"
    assert api.methods() == ["POST", "PATCH", "PATCH"]
    counts = recorder.counts()
    assert (counts.sent, counts.aggregated) == (1, 2)


def test_the_same_reason_for_another_container_is_another_event(api: FakeApi,
                                                               clock: FakeClock) -> None:
    recorder = recorder_for(api, clock)
    recorder.record(placed("db"))
    recorder.record(placed("sidecar"))  # at the same clock reading: still another name
    run_until_idle(recorder)
    assert sorted(e["regarding"]["fieldPath"] for e in api.events.values()) == [
        "spec.containers{db}", "spec.containers{sidecar}"]
    assert api.methods() == ["POST", "POST"]


def test_a_repeat_after_the_window_is_a_new_event(api: FakeApi, clock: FakeClock) -> None:
    recorder = recorder_for(api, clock)
    recorder.record(placed())
    run_until_idle(recorder)
    clock.now += 361
    recorder.record(placed())
    run_until_idle(recorder)
    assert the_series(api) == [("cpus 2-3", None), ("cpus 2-3", None)]


def test_the_same_reason_with_another_note_within_the_window_is_a_new_event(
        api: FakeApi, clock: FakeClock) -> None:
    recorder = recorder_for(api, clock)
    recorder.record(placed(note="moved from 4-5 to 6-7"))
    recorder.record(placed(note="moved from 6-7 to 8-9"))
    recorder.record(placed(note="moved from 6-7 to 8-9"))
    run_until_idle(recorder)
    assert sorted(the_series(api)) == [("moved from 4-5 to 6-7", None),
                                       ("moved from 6-7 to 8-9", 2)]


def test_a_series_whose_event_expired_on_the_server_is_created_again(
        api: FakeApi, clock: FakeClock) -> None:
    recorder = recorder_for(api, clock)
    recorder.record(placed())
    run_until_idle(recorder)
    api.events.clear()  # the API server's event TTL passed
    clock.now += 10
    recorder.record(placed())
    run_until_idle(recorder)
    assert the_series(api) == [("cpus 2-3", 2)]
    assert api.methods() == ["POST", "PATCH", "POST"]
    assert recorder.counts().aggregated == 1


def test_a_full_queue_drops_the_oldest_and_counts_it(api: FakeApi, clock: FakeClock,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    recorder = recorder_for(api, clock, capacity=2)
    with caplog.at_level(logging.WARNING, logger=RECORDER):
        for note in ("one", "two", "three", "four"):
            recorder.record(placed(container_name=note, note=note))
    assert recorder.pending() == 2
    assert recorder.counts().dropped == 2
    assert [r.message for r in caplog.records] == [
        "event queue full (2): dropping the oldest events"]
    run_until_idle(recorder)
    assert sorted(note for note, _ in the_series(api)) == ["four", "three"]


@pytest.mark.parametrize(("mode", "reason"), [("forbidden", "forbidden"),
                                              ("server-error", "server-error")])
def test_a_refusing_server_is_counted_logged_once_retried_and_caught_up_with(
        mode: str, reason: str, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    with serve(mode) as api, caplog.at_level(logging.DEBUG, logger=RECORDER):
        recorder = recorder_for(api, clock)
        recorder.record(placed())  # nothing raised here, nor in the steps
        for _ in range(7):
            recorder.step()
        assert recorder.counts().failed == {reason: 4}
        assert clock.waits == [1.0, 2.0, 4.0]  # back-off doubling between the attempts
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1
        assert f"events not delivered ({reason})" in errors[0].message
        api.mode = "ok"
        run_until_idle(recorder)
        assert recorder.counts().sent == 1
        assert len(api.events) == 1
        assert "events delivered again after 4 failed attempt(s)" in caplog.text


def test_the_back_off_stops_doubling_at_a_minute(clock: FakeClock) -> None:
    with serve("server-error") as api:
        recorder = recorder_for(api, clock)
        recorder.record(placed())
        for _ in range(17):
            recorder.step()
        assert clock.waits == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_a_slow_server_times_out_and_the_event_is_delivered_once_after(
        clock: FakeClock) -> None:
    with serve("slow") as api:
        recorder = recorder_for(api, clock, timeout=0.2)
        recorder.record(placed())
        recorder.step()
        assert recorder.counts().failed == {"timeout": 1}
        api.release.set()  # the server answers again (and may finish the first POST too)
        run_until_idle(recorder)
        assert recorder.counts().sent == 1
        assert len(api.events) == 1  # a POST whose answer was lost is not made twice


def test_an_unreachable_server_is_counted_and_retried(clock: FakeClock) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        recorder = EventRecorder(EventsApi(endpoint(port)), instance="node-a", clock=clock,
                                 wait=clock.wait)
        recorder.record(placed())
        for _ in range(3):
            recorder.step()
    assert recorder.counts().failed == {"unreachable": 2}
    assert recorder.pending() == 1


def test_an_event_whose_namespace_is_gone_is_abandoned_not_retried(
        clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    with serve("crd-missing") as api, caplog.at_level(logging.ERROR, logger=RECORDER):
        recorder = recorder_for(api, clock)  # 404 to every request
        recorder.record(placed())
        recorder.record(placed("sidecar"))
        run_until_idle(recorder)
    counts = recorder.counts()
    assert (counts.abandoned, counts.failed) == (2, {"not-found": 2})
    assert clock.waits == []
    assert len(caplog.records) == 1  # once per reason


def test_an_event_the_server_would_refuse_is_abandoned_without_a_request(
        api: FakeApi, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    recorder = recorder_for(api, clock)
    broken = PlacementEvent(regarding=placed().regarding, reason="", action="Placed",
                            note="no reason")
    with caplog.at_level(logging.ERROR, logger=RECORDER):
        recorder.record(broken)
        recorder.record(placed())
        run_until_idle(recorder)
    counts = recorder.counts()
    assert (counts.abandoned, counts.failed, counts.sent) == (1, {"invalid": 1}, 1)
    assert api.methods() == ["POST"]  # the good one only
    assert "reason: required" in caplog.text


def test_the_worker_thread_delivers_what_is_recorded(api: FakeApi) -> None:
    recorder = EventRecorder(EventsApi(endpoint(api.port)), instance="node-a")
    recorder.start()
    try:
        for _ in range(3):
            recorder.record(placed())
        assert recorder.drain(10)
    finally:
        recorder.stop()
    assert api.methods() == ["POST", "PATCH", "PATCH"]
    assert the_series(api) == [("cpus 2-3", 3)]


class RecordingWhileSending:
    """A sink that, while the first event is being sent, has three more recorded: the queue
    (capacity 2) drops the one in flight and the next."""

    def __init__(self) -> None:
        self.recorder: EventRecorder | None = None
        self.created: list[str] = []

    def create(self, event: dict[str, Any]) -> Created:
        if not self.created and self.recorder is not None:
            for name in ("b", "c", "d"):
                self.recorder.record(placed(container_name=name, note=name))
        self.created.append(event["note"])
        return "created"

    def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        raise AssertionError("no repeats here")


def test_an_event_dropped_while_in_flight_does_not_take_the_next_one_with_it(
        clock: FakeClock) -> None:
    sink = RecordingWhileSending()
    recorder = sink.recorder = EventRecorder(sink, instance="node-a", capacity=2, clock=clock,
                                             wait=clock.wait)
    recorder.record(placed(container_name="a", note="a"))
    run_until_idle(recorder)
    # "a" was sent, then dropped from the queue with "b"; "c" and "d" are still sent.
    assert sink.created == ["a", "c", "d"]
    assert (recorder.counts().sent, recorder.counts().dropped) == (3, 2)


class BrokenOnce:
    """A sink whose first creation fails in a way no API error describes (a defect)."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def create(self, event: dict[str, Any]) -> Created:
        if not self.created:
            self.created.append("(broken)")
            raise RuntimeError("a defect")
        self.created.append(event["note"])
        return "created"

    def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        raise AssertionError("no repeats here")


def test_a_defect_in_sending_loses_that_event_but_not_the_worker(clock: FakeClock) -> None:
    sink = BrokenOnce()
    recorder = EventRecorder(sink, instance="node-a", clock=clock, wait=clock.wait)
    recorder.record(placed(container_name="a", note="a"))
    recorder.record(placed(container_name="b", note="b"))
    run_until_idle(recorder)
    assert sink.created == ["(broken)", "b"]
    counts = recorder.counts()
    assert (counts.abandoned, counts.failed, counts.sent) == (1, {"error": 1}, 1)
