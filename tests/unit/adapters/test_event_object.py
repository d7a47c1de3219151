"""The events.k8s.io/v1 Events the plugin builds, and the API server's rules for them: every
rule refuses an event that breaks it (``tests/support/event_cases.py``), and what the builder
makes passes them all, however long the names and notes it is given."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone

import pytest

from cpuset_adapters.kubernetes.event_object import (
    PlacementEvent,
    build_event,
    container,
    event_name,
    micro_time,
    node,
    series_patch,
    truncate_utf8,
)
from cpuset_adapters.kubernetes.event_rules import creation_violations, update_violations
from tests.support.event_cases import AT, CREATION_CASES, UPDATE_CASES, Case, valid_event


def test_a_container_event_regards_the_pod_and_the_container_in_the_kubelet_shape() -> None:
    event = valid_event()
    assert event == {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "db-0.18ec92b613895600", "namespace": "team-a"},
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "db-0",
                      "namespace": "team-a", "uid": "5e1f-uid",
                      "fieldPath": "spec.containers{db}"},
        "reportingController": "weka.io/nri-cpuset", "reportingInstance": "node-a",
        "action": "Placed", "reason": "ExclusiveCpus",
        "note": "cpus 2-3 (NUMA node 0), mems 0", "type": "Normal",
        "eventTime": "2026-11-29T17:01:02.123456Z",
    }
    assert creation_violations(event) == []


def test_the_name_suffix_is_the_unix_time_in_nanoseconds_in_hex() -> None:
    suffix = valid_event()["metadata"]["name"].split(".")[1]
    assert int(suffix, 16) == 1795971662123456000
    assert len(suffix) == 16


def test_a_node_event_is_in_the_default_namespace_and_passes_the_rules() -> None:
    event = build_event(PlacementEvent(regarding=node("node-a"), reason="SharedPoolChanged",
                                       action="Resized", note="shared pool 0-1,6-7"),
                        instance="node-a", at=AT)
    assert event["metadata"]["namespace"] == "default"
    assert event["regarding"] == {"apiVersion": "v1", "kind": "Node", "name": "node-a",
                                  "uid": "node-a"}
    assert creation_violations(event) == []


def test_micro_time_has_six_fraction_digits_in_utc_even_on_a_whole_second() -> None:
    east = timezone(timedelta(hours=2))
    assert micro_time(datetime(2026, 11, 29, 19, 1, 2, tzinfo=east)) == \
        "2026-11-29T17:01:02.000000Z"


def test_a_naive_time_is_refused_rather_than_guessed() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        micro_time(datetime(2026, 11, 29, 17, 1, 2))


@pytest.mark.parametrize("pod", ["p" * 253, "p" * 236 + "-" + "q" * 16, "a.b" * 84])
def test_a_long_pod_name_gives_an_event_name_within_253_characters(pod: str) -> None:
    name = event_name(pod, AT)
    assert len(name) <= 253
    event = valid_event()
    event["metadata"]["name"] = name
    assert creation_violations(event) == []


def test_a_note_of_multibyte_characters_is_cut_at_a_character_within_1024_bytes() -> None:
    regarding = container(namespace="ns", pod="p", pod_uid="u", name="c")
    note = "é" * 2000  # 2 bytes each: 4000 bytes
    event = build_event(PlacementEvent(regarding=regarding, reason="R", action="A", note=note),
                        instance="i" * 300, at=AT)
    assert len(event["note"].encode()) <= 1024
    assert event["note"].endswith("…")
    assert event["note"].startswith("é" * 500)
    assert len(event["reportingInstance"].encode()) <= 128
    assert creation_violations(event) == []


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("short", 10, "short"),
    ("abcdef", 4, "a…"),  # the ellipsis is 3 bytes
    ("€€€", 8, "€…"),  # 9 bytes; the second € would end past byte 5
    ("abcdef", 2, "ab"),  # no room for the ellipsis: cut only
])
def test_truncation_counts_bytes_and_never_splits_a_character(text: str, limit: int,
                                                              expected: str) -> None:
    assert truncate_utf8(text, limit) == expected
    assert len(truncate_utf8(text, limit).encode()) <= limit


def test_a_series_patch_touches_the_series_alone_and_passes_the_update_rules() -> None:
    old = valid_event()
    patch = series_patch(count=2, last_observed=AT + timedelta(seconds=3))
    assert patch == {"series": {"count": 2, "lastObservedTime": "2026-11-29T17:01:05.123456Z"}}
    assert update_violations({**old, **patch}, old) == []


@pytest.mark.parametrize("case", CREATION_CASES, ids=lambda case: case.id)
def test_the_validator_refuses_an_event_that_breaks_a_creation_rule(case: Case) -> None:
    event = valid_event()
    case.mutate(event)
    found = creation_violations(event)
    assert case.field in {violation.field for violation in found}, found
    assert all(str(violation).startswith(f"{violation.field}: ") for violation in found)


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda case: case.id)
def test_the_validator_refuses_a_patch_that_breaks_an_update_rule(case: Case) -> None:
    old = valid_event()
    new = copy.deepcopy(old)
    case.mutate(new)
    assert case.field in {violation.field for violation in update_violations(new, old)}


def test_an_unchanged_series_is_not_checked_again_on_update() -> None:
    # validateV1EventSeries runs on update only when the series changed.
    old = valid_event() | {"series": {"count": 1, "lastObservedTime": "x"}}
    assert [v.field for v in update_violations(copy.deepcopy(old), old)] == \
        ["series.lastObservedTime"]  # the decoding of the time still applies; count does not


def test_a_message_names_the_field_the_rule_and_the_value() -> None:
    event = valid_event() | {"reason": "R" * 130}
    assert [str(v) for v in creation_violations(event)] == \
        ["reason: can have at most 128 characters (bytes of UTF-8), has 130"]
    event = valid_event() | {"reportingController": "Weka.io/nri-cpuset"}
    [violation] = creation_violations(event)
    assert "'Weka.io/nri-cpuset'" in str(violation)
    assert "prefix part a lowercase RFC 1123 subdomain" in str(violation)


def test_an_event_in_utc_plus_offset_form_still_decodes() -> None:
    event = valid_event() | {"eventTime": "2026-11-29T19:01:02.123456+02:00"}
    assert creation_violations(event) == []


def test_the_name_suffix_is_unpadded_hex_as_the_kubelet_writes_it() -> None:
    assert event_name("p", datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)) == "p.3b9aca00"
