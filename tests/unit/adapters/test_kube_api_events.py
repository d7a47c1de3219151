"""The lab's fake API server serves Events as the real one does: it refuses every bad event of
the shared table (the same table the plugin's validator is tested against), stores and patches
good ones, and its failure modes apply to events too; ``EventsApi`` against it."""

from __future__ import annotations

import copy
import http.client
import json
from typing import Any

import pytest

from cpuset_adapters.kubernetes.api_client import ApiError, EventsApi
from cpuset_adapters.kubernetes.credentials import Endpoint
from cpuset_adapters.kubernetes.event_object import series_patch
from cpuset_lab.kube_event_rules import refuse_creation, refuse_update, undecodable
from tests.support.event_cases import AT, CREATION_CASES, UPDATE_CASES, Case, valid_event
from tests.support.kube_api import serve

EVENTS = "/apis/events.k8s.io/v1/namespaces/team-a/events"


def plain(port: int) -> Endpoint:
    return Endpoint(host="127.0.0.1", port=port, context=None, token=lambda: "t0k",
                    source="test")


def _refusal(event: dict[str, Any]) -> tuple[str, str] | None:
    return undecodable(event) or refuse_creation(event)


def test_the_fake_accepts_the_valid_event_of_the_table() -> None:
    assert _refusal(valid_event()) is None


@pytest.mark.parametrize("case", CREATION_CASES, ids=lambda case: case.id)
def test_the_fake_refuses_an_event_that_breaks_a_creation_rule(case: Case) -> None:
    event = valid_event()
    case.mutate(event)
    refusal = _refusal(event)
    assert refusal is not None
    assert refusal[0] == case.field


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda case: case.id)
def test_the_fake_refuses_a_patch_that_breaks_an_update_rule(case: Case) -> None:
    old = valid_event()
    new = copy.deepcopy(old)
    case.mutate(new)
    refusal = undecodable(new) or refuse_update(new, old)
    assert refusal is not None
    assert refusal[0] == case.field


def test_an_event_is_created_listed_and_its_series_patched() -> None:
    with serve() as api:
        client = EventsApi(plain(api.port))
        event = valid_event()
        name = event["metadata"]["name"]
        assert client.create(event) == "created"
        client.patch("team-a", name, series_patch(count=2, last_observed=AT))
        assert api.events["team-a", name]["series"] == {
            "count": 2, "lastObservedTime": "2026-11-29T17:01:02.123456Z"}
        assert api.events["team-a", name]["note"] == event["note"]
        assert [(r.method, r.path, r.content_type) for r in api.requests] == [
            ("POST", EVENTS, "application/json"),
            ("PATCH", f"{EVENTS}/{name}", "application/merge-patch+json")]
        client.close()


def test_the_list_holds_the_namespace_s_events() -> None:
    with serve() as api:
        EventsApi(plain(api.port)).create(valid_event())
        listed = _get(api.port, EVENTS)
        assert listed["kind"] == "EventList"
        assert [item["reason"] for item in listed["items"]] == ["ExclusiveCpus"]
        assert _get(api.port, "/apis/events.k8s.io/v1/namespaces/other/events")["items"] == []


def test_an_invalid_event_is_refused_with_422_naming_the_field() -> None:
    with serve() as api:
        event = valid_event() | {"type": "Info"}
        with pytest.raises(ApiError) as caught:
            EventsApi(plain(api.port)).create(event)
        assert (caught.value.reason, caught.value.status) == ("invalid", 422)
        assert "type: not Normal or Warning" in caught.value.detail
        assert api.events == {}


def test_a_patch_of_anything_but_the_series_is_refused_with_422() -> None:
    with serve() as api:
        client = EventsApi(plain(api.port))
        event = valid_event()
        client.create(event)
        with pytest.raises(ApiError) as caught:
            client.patch("team-a", event["metadata"]["name"], {"note": "changed"})
        assert caught.value.reason == "invalid"
        assert "note: field is immutable" in caught.value.detail


def test_a_namespace_other_than_the_url_s_is_a_bad_request() -> None:
    with serve() as api:
        event = valid_event()
        event["metadata"]["namespace"] = "team-b"
        code, answer = _send(api.port, "POST", EVENTS, event)
        assert code == 400
        assert "does not match the namespace sent on the request" in answer["message"]
        assert api.events == {}


def test_a_name_taken_is_reported_as_existing_not_as_a_failure() -> None:
    with serve() as api:
        client = EventsApi(plain(api.port))
        assert client.create(valid_event()) == "created"
        assert client.create(valid_event()) == "exists"


def test_a_patch_of_a_missing_event_is_not_found() -> None:
    with serve() as api, pytest.raises(ApiError) as caught:
        EventsApi(plain(api.port)).patch("team-a", "gone.1", series_patch(count=2,
                                                                          last_observed=AT))
    assert caught.value.reason == "not-found"


@pytest.mark.parametrize(("mode", "reason"), [("forbidden", "forbidden"),
                                              ("server-error", "server-error")])
def test_the_failure_modes_apply_to_events(mode: str, reason: str) -> None:
    with serve(mode) as api, pytest.raises(ApiError) as caught:
        EventsApi(plain(api.port)).create(valid_event())
    assert caught.value.reason == reason
    assert api.events == {}


def _get(port: int, path: str) -> dict[str, Any]:
    code, answer = _send(port, "GET", path, None)
    assert code == 200
    return answer


def _send(port: int, method: str, path: str,
          body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        data = json.dumps(body).encode() if body is not None else None
        connection.request(method, path, body=data,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        answer: dict[str, Any] = json.loads(response.read())
        return response.status, answer
    finally:
        connection.close()
