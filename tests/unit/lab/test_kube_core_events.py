"""The lab's fake API server serves what kubectl reads as the real one does: discovery, the pods
the lab tells it of, and the stored events.k8s.io events in core/v1, converted as the API server
converts them, filtered by its field selectors (refusing an unsupported field with 400) and
printed as its event Table."""

from __future__ import annotations

import http.client
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cpuset_lab.kube_core_events import SUPPORTED, selectable, to_core
from cpuset_lab.kube_event_table import cells, human_duration, table
from cpuset_lab.kube_field_selector import SelectorError, matches, parse
from cpuset_lab.kube_pods import PodContainer, pod_object
from cpuset_lab.pod_spec import PodSpec, QosClass
from tests.support.event_cases import AT, valid_event
from tests.support.kube_api import FakeApi, serve

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def get(api: FakeApi, path: str, accept: str = "application/json") -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=5)
    connection.request("GET", path, headers={"Accept": accept})
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read())


def post(api: FakeApi, event: dict[str, Any]) -> dict[str, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=5)
    namespace = event["metadata"]["namespace"]
    connection.request("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                       json.dumps(event), {"Content-Type": "application/json"})
    answer = connection.getresponse()
    assert answer.status == 201
    created: dict[str, Any] = json.loads(answer.read())
    return created


def event_of(name: str, reason: str, *, pod: str = "db-0", uid: str = "5e1f-uid",
             **fields: Any) -> dict[str, Any]:
    event = valid_event()
    event["metadata"]["name"] = name
    event["regarding"].update(name=pod, uid=uid)
    event.update(reason=reason, **fields)
    return event


# ---- conversion ----------------------------------------------------------------------------


def test_an_event_is_seen_in_core_v1_with_the_api_servers_field_names() -> None:
    event = event_of("db-0.1", "MovedForPin", action="Moved",
                     series={"count": 3, "lastObservedTime": "2026-11-29T17:05:00.000000Z"},
                     related={"kind": "Pod", "name": "io", "namespace": "team-a"})
    core = to_core(event)
    assert core["kind"] == "Event"
    assert core["apiVersion"] == "v1"
    assert core["involvedObject"] == event["regarding"]
    assert core["message"] == event["note"]
    assert core["reportingComponent"] == event["reportingController"] == "weka.io/nri-cpuset"
    assert core["reportingInstance"] == "node-a"
    assert (core["reason"], core["type"], core["action"]) == ("MovedForPin", "Normal", "Moved")
    assert core["eventTime"] == event["eventTime"]
    assert core["series"] == event["series"]
    assert core["related"] == event["related"]
    # events.k8s.io events leave the deprecated fields unset: so does their core view
    assert core["source"] == {}
    assert core["firstTimestamp"] is None
    assert core["lastTimestamp"] is None
    assert "count" not in core


def test_the_deprecated_fields_become_source_timestamps_and_count() -> None:
    event = event_of("db-0.2", "Old", deprecatedSource={"component": "kubelet", "host": "n1"},
                     deprecatedFirstTimestamp="2026-11-29T17:00:00Z",
                     deprecatedLastTimestamp="2026-11-29T17:04:00Z", deprecatedCount=4)
    core = to_core(event)
    assert core["source"] == {"component": "kubelet", "host": "n1"}
    assert (core["firstTimestamp"], core["lastTimestamp"], core["count"]) == (
        "2026-11-29T17:00:00Z", "2026-11-29T17:04:00Z", 4)


# ---- field selectors -----------------------------------------------------------------------

EVENTS = [to_core(event_of("db-0.1", "ExclusiveCpusAssigned")),
          to_core(event_of("db-0.2", "MovedForPin")),
          to_core(event_of("io.1", "PinnedCpusAssigned", pod="io", uid="io-uid")),
          to_core(event_of("old.1", "Old", pod="a,b", uid="ab-uid",
                           deprecatedSource={"component": "kubelet"}))]


@pytest.mark.parametrize(("selector", "names"), [
    ("", ["db-0.1", "db-0.2", "io.1", "old.1"]),
    ("reason=MovedForPin", ["db-0.2"]),
    ("reason==MovedForPin", ["db-0.2"]),
    ("reason!=MovedForPin", ["db-0.1", "io.1", "old.1"]),
    ("involvedObject.name=db-0,involvedObject.uid=5e1f-uid,involvedObject.kind=Pod",
     ["db-0.1", "db-0.2"]),
    ("involvedObject.name=db-0,reason!=MovedForPin", ["db-0.1"]),
    ("involvedObject.fieldPath=spec.containers{db}", ["db-0.1", "db-0.2", "io.1", "old.1"]),
    ("source=weka.io/nri-cpuset", ["db-0.1", "db-0.2", "io.1"]),  # else reportingController
    ("source=kubelet", ["old.1"]),
    ("reportingComponent=weka.io/nri-cpuset", ["db-0.1", "db-0.2", "io.1", "old.1"]),
    ("metadata.name=io.1,metadata.namespace=team-a,type=Normal", ["io.1"]),
    (r"involvedObject.name=a\,b", ["old.1"]),  # an escaped comma is part of the value
    ("reason=MovedForPin,", ["db-0.2"]),  # an empty term is skipped
])
def test_a_field_selector_chooses_the_events_the_api_server_would(selector: str,
                                                                   names: list[str]) -> None:
    terms = parse(selector, SUPPORTED)
    assert [e["metadata"]["name"] for e in EVENTS if matches(terms, selectable(e))] == names


@pytest.mark.parametrize(("selector", "message"), [
    ("note=x", "field label not supported: note"),
    ("reason=a,involvedObject.host=b", "field label not supported: involvedObject.host"),
    ("reason", "invalid selector: 'reason'; can't understand 'reason'"),
    (r"reason=a\b", "invalid escape sequence"),
    ("reason=a\\", "unterminated escape sequence"),
])
def test_a_selector_the_api_server_refuses_is_refused(selector: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message.replace("(", r"\(")):
        parse(selector, SUPPORTED)


# ---- the Table -----------------------------------------------------------------------------

NOW = datetime(2026, 11, 29, 17, 1, 2, 123456, tzinfo=UTC) + timedelta(minutes=5, seconds=3)


def test_the_table_has_the_api_servers_event_columns_wide_ones_at_priority_one() -> None:
    columns = table([], now=NOW)["columnDefinitions"]
    assert [(c["name"], c["priority"]) for c in columns] == [
        ("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1),
        ("Source", 1), ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)]


def test_a_single_events_row_is_seen_at_its_event_time_once() -> None:
    assert cells(to_core(event_of("db-0.1", "ExclusiveCpusAssigned", note=" cpus 2-3 ")),
                 NOW) == ["5m3s", "Normal", "ExclusiveCpusAssigned", "pod/db-0",
                          "spec.containers{db}", "weka.io/nri-cpuset, node-a", "cpus 2-3",
                          "5m3s", 1, "db-0.1"]


def test_a_series_row_is_last_seen_at_its_last_observation_with_its_count() -> None:
    series = {"count": 4, "lastObservedTime": (AT + timedelta(minutes=5)).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")}
    row = cells(to_core(event_of("db-0.1", "DriftRepaired", series=series)), NOW)
    assert (row[0], row[7], row[8]) == ("3s", "5m3s", 4)


def test_a_node_event_names_the_node_and_the_source_its_component_and_host() -> None:
    event = to_core(event_of("n.1", "Old", deprecatedSource={"component": "kubelet",
                                                             "host": "node-b"}))
    event["involvedObject"] = {"kind": "Node", "name": "node-b"}
    row = cells(event, NOW)
    assert (row[3], row[5]) == ("node/node-b", "kubelet, node-b")


@pytest.mark.parametrize(("seconds", "text"), [
    (-3, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (185, "3m5s"),
    (600, "10m"), (179 * 60, "179m"), (3 * 3600 + 60, "3h1m"), (8 * 3600, "8h"),
    (47 * 3600, "47h"), (50 * 3600, "2d2h"), (8 * 86400, "8d"), (800 * 86400, "2y70d"),
    (9 * 365 * 86400, "9y")])
def test_ages_read_as_kubectl_prints_them(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


# ---- over HTTP: discovery, pods, events ----------------------------------------------------


def test_discovery_names_the_core_pods_and_events_and_the_groups() -> None:
    with serve() as api:
        assert get(api, "/api?timeout=32s") == (200, {
            "kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        _, groups = get(api, "/apis")
        assert [g["name"] for g in groups["groups"]] == ["events.k8s.io",
                                                          "topology.node.k8s.io"]
        _, core = get(api, "/api/v1")
        assert {r["name"]: r["kind"] for r in core["resources"]} == {"pods": "Pod",
                                                                     "events": "Event"}
        _, events = get(api, "/apis/events.k8s.io/v1")
        assert events["groupVersion"] == "events.k8s.io/v1"
        assert get(api, "/apis/v1")[0] == 404


def test_a_pod_the_lab_tells_of_is_served_and_an_unknown_one_is_not_found() -> None:
    spec = PodSpec(name="db", uid="u-1", annotations={"a": "b"})
    pod = pod_object(spec, node="lab-node", qos=QosClass.GUARANTEED,
                     containers=[PodContainer(name="pg", image="busybox",
                                              requests={"cpu": "1"}, limits={"cpu": "1"})])
    with serve() as api:
        api.add_pod(pod)
        code, served = get(api, "/api/v1/namespaces/default/pods/db")
        assert code == 200
        assert served["metadata"]["uid"] == "u-1"
        assert served["spec"]["nodeName"] == "lab-node"
        assert served["status"]["qosClass"] == "Guaranteed"
        assert [p["metadata"]["name"] for p in get(api, "/api/v1/pods")[1]["items"]] == ["db"]
        assert get(api, "/api/v1/namespaces/other/pods/db")[0] == 404
        api.remove_pod("default", "db")
        assert get(api, "/api/v1/namespaces/default/pods/db")[0] == 404
    with pytest.raises(ValueError, match="no uid"):
        pod_object(PodSpec(name="x"), node="n", qos=QosClass.BURSTABLE, containers=[])


def test_stored_events_are_listed_in_core_v1_filtered_and_as_a_table() -> None:
    with serve() as api:
        created = post(api, event_of("db-0.1", "ExclusiveCpusAssigned"))
        assert created["metadata"]["uid"]
        assert created["metadata"]["creationTimestamp"]
        post(api, event_of("db-0.2", "MovedForPin"))
        post(api, {**event_of("web.1", "MovedForPin"),
                   "metadata": {"name": "web.1", "namespace": "team-b"}})
        code, listed = get(api, "/api/v1/namespaces/team-a/events?fieldSelector="
                                "reason%3DMovedForPin&limit=500")
        assert code == 200
        assert listed["kind"] == "EventList"
        assert [e["metadata"]["name"] for e in listed["items"]] == ["db-0.2"]
        assert listed["items"][0]["message"] == "cpus 2-3 (NUMA node 0), mems 0"
        _, everywhere = get(api, "/api/v1/events?fieldSelector=reason%3DMovedForPin", TABLE)
        assert everywhere["kind"] == "Table"
        assert [(r["object"]["metadata"]["namespace"], r["cells"][2]) for r in
                everywhere["rows"]] == [("team-a", "MovedForPin"), ("team-b", "MovedForPin")]
        code, one = get(api, "/api/v1/namespaces/team-a/events/db-0.1")
        assert (code, one["reason"]) == (200, "ExclusiveCpusAssigned")


def test_an_unsupported_field_is_refused_with_400_as_by_the_api_server() -> None:
    with serve() as api:
        code, answer = get(api, "/api/v1/events?fieldSelector=note%3Dx")
        assert code == 400
        assert (answer["reason"], answer["message"]) == ("BadRequest",
                                                         "field label not supported: note")
