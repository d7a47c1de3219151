"""core/v1 Events as the ``meta.k8s.io/v1`` Table the API server answers ``kubectl get events``
with (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``), for the lab's fake API server.

The columns and cells mirror the API server's event printer (kubernetes
``pkg/printers/internalversion/printers.go``: ``eventColumnDefinitions``, ``printEvent``,
``formatEventSource``), printed wide as the server always does (kubectl hides the priority-1
columns unless ``-o wide``); ages are apimachinery's ``duration.HumanDuration``
(``pkg/util/duration``). A row carries the event's metadata (``includeObject=Metadata``, the
default), the whole event (``Object``) or nothing (``None``), as kubectl asks.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

_COLUMNS = (  # name, priority, format, description
    ("Last Seen", 0, "", "when the event was last seen"),
    ("Type", 0, "", "Normal or Warning"),
    ("Reason", 0, "", "why the event was written"),
    ("Object", 0, "", "the object the event is about"),
    ("Subobject", 1, "", "the part of the object (a container's field path)"),
    ("Source", 1, "", "the component and instance that reported it"),
    ("Message", 0, "", "the event's message"),
    ("First Seen", 1, "", "when the event was first seen"),
    ("Count", 1, "", "how many times it happened"),
    ("Name", 1, "name", "the event's name"),
)


def table(events: list[dict[str, Any]], *, include: str = "Metadata",
          now: datetime | None = None) -> dict[str, Any]:
    """A Table of the core/v1 ``events``, their ages taken at ``now`` (the current time)."""
    at = now or datetime.now(UTC)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": ""},
            "columnDefinitions": [{"name": name, "type": "string", "format": fmt,
                                   "description": why, "priority": priority}
                                  for name, priority, fmt, why in _COLUMNS],
            "rows": [_row(event, include, at) for event in events]}


def cells(event: dict[str, Any], now: datetime) -> list[Any]:
    """The ten cells of ``event``'s row, in the columns' order."""
    first = (_since(event.get("firstTimestamp"), now) if event.get("firstTimestamp")
             else _since(event.get("eventTime"), now))
    last = _since(event["lastTimestamp"], now) if event.get("lastTimestamp") else first
    count = event.get("count") or 1  # a singleton event has no count in the new API
    if series := event.get("series"):
        last, count = _since(series.get("lastObservedTime"), now), series.get("count", 0)
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    return [last, event.get("type", ""), event.get("reason", ""), target,
            involved.get("fieldPath", ""), _source(event), str(event.get("message", "")).strip(),
            first, int(count), (event.get("metadata") or {}).get("name", "")]


def human_duration(seconds: float) -> str:
    """apimachinery's ``HumanDuration``: two or three significant figures of a duration (up to
    a second in the future reads as now)."""
    if int(seconds) < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    m, h = s // 60, s // 3600
    d, y = h // 24, h // (24 * 365)
    steps = ((s < 120, f"{s}s"), (m < 10, _two(m, "m", s % 60, "s")), (m < 180, f"{m}m"),
             (h < 8, _two(h, "h", m % 60, "m")), (h < 48, f"{h}h"),
             (h < 24 * 8, _two(d, "d", h % 24, "h")), (h < 24 * 365 * 2, f"{d}d"),
             (h < 24 * 365 * 8, _two(y, "y", d % 365, "d")))
    return next((text for below, text in steps if below), f"{y}y")


def _two(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}{small}{small_unit}" if small else f"{big}{big_unit}"


def _since(stamp: str | None, now: datetime) -> str:
    if not stamp:
        return "<unknown>"
    then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return human_duration((now - then).total_seconds())


def _source(event: dict[str, Any]) -> str:
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent", "")
    instance = source.get("host") or event.get("reportingInstance", "")
    return f"{component}, {instance}" if instance else component


def _row(event: dict[str, Any], include: str, now: datetime) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": cells(event, now)}
    if include == "Object":
        row["object"] = event
    elif include != "None":
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": event.get("metadata", {})}
    return row
