"""Events the API server refuses, one rule broken each (``event_rules``' sources): the table
the plugin's validator and the lab's fake API server are both tested against, so a rule one of
them misses shows as a failing case."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cpuset_adapters.kubernetes.event_object import PlacementEvent, build_event, container

AT = datetime(2026, 11, 29, 17, 1, 2, 123456, tzinfo=UTC)


def valid_event() -> dict[str, Any]:
    """An event the API server accepts: an integer container's placement."""
    event = PlacementEvent(
        regarding=container(namespace="team-a", pod="db-0", pod_uid="5e1f-uid", name="db"),
        reason="ExclusiveCpus", action="Placed", note="cpus 2-3 (NUMA node 0), mems 0")
    return build_event(event, instance="node-a", at=AT)


@dataclass(frozen=True)
class Case:
    """An event made invalid by ``mutate``; ``field`` is the one the server names."""

    id: str
    field: str
    mutate: Callable[[dict[str, Any]], None]


def _set(*path_and_value: Any) -> Callable[[dict[str, Any]], None]:
    *path, value = path_and_value

    def mutate(event: dict[str, Any]) -> None:
        target = event
        for key in path[:-1]:
            target = target.setdefault(key, {})
        if value is _DELETE:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    return mutate


_DELETE = object()

CREATION_CASES = [
    Case("no event time", "eventTime", _set("eventTime", _DELETE)),
    Case("event time with 3 fraction digits", "eventTime",
         _set("eventTime", "2026-11-29T17:01:02.123Z")),
    Case("event time without fraction", "eventTime", _set("eventTime", "2026-11-29T17:01:02Z")),
    Case("no reporting controller", "reportingController", _set("reportingController", "")),
    Case("reporting controller with two slashes", "reportingController",
         _set("reportingController", "weka.io/nri/cpuset")),
    Case("reporting controller with an empty prefix", "reportingController",
         _set("reportingController", "/nri-cpuset")),
    Case("reporting controller with an upper-case prefix", "reportingController",
         _set("reportingController", "Weka.io/nri-cpuset")),
    Case("reporting controller name ending in a dash", "reportingController",
         _set("reportingController", "weka.io/nri-cpuset-")),
    Case("reporting controller name of 64 characters", "reportingController",
         _set("reportingController", "weka.io/" + "n" * 64)),
    Case("no reporting instance", "reportingInstance", _set("reportingInstance", _DELETE)),
    Case("reporting instance of 129 bytes", "reportingInstance",
         _set("reportingInstance", "n" * 129)),
    Case("no action", "action", _set("action", "")),
    Case("action of 129 bytes", "action", _set("action", "A" * 129)),
    Case("no reason", "reason", _set("reason", _DELETE)),
    Case("reason of 129 bytes", "reason", _set("reason", "R" * 129)),
    Case("note of 1025 bytes", "note", _set("note", "n" * 1025)),
    Case("note of 1023 characters but 1025 bytes", "note", _set("note", "éé" + "n" * 1021)),
    Case("type neither Normal nor Warning", "type", _set("type", "Info")),
    Case("no type", "type", _set("type", _DELETE)),
    Case("no name", "metadata.name", _set("metadata", "name", _DELETE)),
    Case("name with upper case", "metadata.name", _set("metadata", "name", "DB-0.18a")),
    Case("name of 254 characters", "metadata.name", _set("metadata", "name", "a" * 254)),
    Case("name ending in a dot", "metadata.name", _set("metadata", "name", "db-0.")),
    Case("no namespace", "metadata.namespace", _set("metadata", "namespace", _DELETE)),
    Case("namespace with a dot", "metadata.namespace",
         _set("metadata", "namespace", "team.a")),
    Case("node event outside default and kube-system", "regarding.namespace",
         _set("regarding", "namespace", _DELETE)),
    Case("series of one", "series.count",
         _set("series", {"count": 1, "lastObservedTime": "2026-11-29T17:01:03.000000Z"})),
    Case("series without its last time", "series.lastObservedTime",
         _set("series", {"count": 2})),
    Case("series with a last time that does not parse", "series.lastObservedTime",
         _set("series", {"count": 2, "lastObservedTime": "2026-11-29 17:01:03"})),
    Case("deprecated count set", "deprecatedCount", _set("deprecatedCount", 2)),
    Case("deprecated first timestamp set", "deprecatedFirstTimestamp",
         _set("deprecatedFirstTimestamp", "2026-11-29T17:01:02Z")),
    Case("deprecated last timestamp set", "deprecatedLastTimestamp",
         _set("deprecatedLastTimestamp", "2026-11-29T17:01:02Z")),
    Case("deprecated source set", "deprecatedSource",
         _set("deprecatedSource", {"component": "kubelet"})),
]

UPDATE_CASES = [
    Case("note changed", "note", _set("note", "another note")),
    Case("reason changed", "reason", _set("reason", "Moved")),
    Case("action changed", "action", _set("action", "Moved")),
    Case("type changed", "type", _set("type", "Warning")),
    Case("event time changed", "eventTime", _set("eventTime", "2026-11-29T17:01:03.000000Z")),
    Case("regarding changed", "regarding", _set("regarding", "fieldPath", "spec.containers{x}")),
    Case("reporting instance changed", "reportingInstance", _set("reportingInstance", "node-b")),
    Case("reporting controller changed", "reportingController",
         _set("reportingController", "weka.io/other")),
    Case("series count of one", "series.count",
         _set("series", {"count": 1, "lastObservedTime": "2026-11-29T17:01:03.000000Z"})),
    Case("series without its last time", "series.lastObservedTime",
         _set("series", {"count": 3})),
]
