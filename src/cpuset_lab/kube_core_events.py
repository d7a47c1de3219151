"""The core/v1 view of the events the lab's fake API server stores as ``events.k8s.io/v1``: what
``kubectl describe`` and ``kubectl get events`` read (``/api/v1/events``,
``/api/v1/namespaces/<ns>/events[/<name>]``).

Both versions are one object in the real API server; these mirror its conversion
(kubernetes ``pkg/apis/events/v1/conversion.go`` and the generated field-by-field part:
``regarding`` is ``involvedObject``, ``note`` is ``message``, ``reportingController`` is
``reportingComponent``, the ``deprecated*`` fields are ``source``, ``firstTimestamp``,
``lastTimestamp`` and ``count``; the rest keep their names) and its selectable fields
(``pkg/registry/core/event/strategy.go``, ``ToSelectableFields``: ``source`` is the source's
component or else the reporting controller; the supported labels from
``pkg/apis/core/v1/conversion.go``, ``AddFieldLabelConversionsForEvent``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs

from cpuset_lab import kube_event_table
from cpuset_lab.kube_events import Answer, Store, status
from cpuset_lab.kube_field_selector import SelectorError, Term, matches, parse

_PATH = re.compile(r"/api/v1(?:/namespaces/([^/]+))?/events(?:/([^/]+))?")
_REFERENCE = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

SUPPORTED = frozenset({*(f"involvedObject.{key}" for key in _REFERENCE), "reason",
                       "reportingComponent", "source", "type", "metadata.namespace",
                       "metadata.name"})
"""The field labels the API server takes in a core/v1 events selector."""


def is_core_events(path: str) -> bool:
    return _PATH.fullmatch(path.split("?", 1)[0]) is not None


def to_core(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` (events.k8s.io/v1) as the API server serves it in core/v1."""
    core: dict[str, Any] = {
        "kind": "Event", "apiVersion": "v1", "metadata": event.get("metadata", {}),
        "involvedObject": event.get("regarding", {}), "reason": event.get("reason", ""),
        "message": event.get("note", ""), "source": event.get("deprecatedSource") or {},
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "type": event.get("type", ""), "eventTime": event.get("eventTime"),
        "reportingComponent": event.get("reportingController", ""),
        "reportingInstance": event.get("reportingInstance", ""),
    }
    if event.get("deprecatedCount"):
        core["count"] = event["deprecatedCount"]
    for key in ("series", "action", "related"):
        if event.get(key):
            core[key] = event[key]
    return core


def selectable(core: dict[str, Any]) -> dict[str, str]:
    """The fields a selector may name, with ``core``'s values."""
    involved, meta = core.get("involvedObject") or {}, core.get("metadata") or {}
    return {**{f"involvedObject.{key}": str(involved.get(key, "")) for key in _REFERENCE},
            "reason": core.get("reason", ""), "type": core.get("type", ""),
            "reportingComponent": core.get("reportingComponent", ""),
            "source": (core.get("source") or {}).get("component")
            or core.get("reportingComponent", ""),
            "metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}


def handle(path: str, accept: str, events: Store) -> Answer:
    """Answer a GET under ``/api/v1`` for events (the caller holds the lock): one event, or a
    list (a ``meta.k8s.io/v1`` Table when ``accept`` asks for one) filtered by the query's
    ``fieldSelector``."""
    route, _, query = path.partition("?")
    match = _PATH.fullmatch(route)
    if match is None:
        return 404, status(404, "NotFound", f"no such path {path}")
    namespace, name = match.group(1), match.group(2)
    if name is not None:
        found = events.get((namespace or "", name))
        if found is None:
            return 404, status(404, "NotFound", f'events "{name}" not found')
        return 200, to_core(found)
    params = parse_qs(query)
    try:
        terms = parse(params.get("fieldSelector", [""])[0], SUPPORTED)
    except SelectorError as refused:
        return 400, status(400, "BadRequest", str(refused))
    items = _listed(events.items(), namespace, terms)
    if "as=Table" in accept:
        return 200, kube_event_table.table(
            items, include=params.get("includeObject", ["Metadata"])[0])
    return 200, {"kind": "EventList", "apiVersion": "v1", "metadata": {"resourceVersion": ""},
                 "items": items}


def _listed(stored: Iterable[tuple[tuple[str, str], dict[str, Any]]], namespace: str | None,
            terms: tuple[Term, ...]) -> list[dict[str, Any]]:
    chosen = (to_core(event) for (ns, _), event in sorted(stored, key=lambda item: item[0])
              if namespace is None or ns == namespace)
    return [core for core in chosen if matches(terms, selectable(core))]
