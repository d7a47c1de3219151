"""The API server's rules for an ``events.k8s.io/v1`` Event, as the lab's fake API server
applies them: written apart from the plugin's own validator
(``cpuset_adapters.kubernetes.event_rules``), and tested against the same table of bad events,
so a rule one of them misses shows.

From kubernetes ``pkg/apis/core/validation/events.go`` (``ValidateEventCreate``,
``ValidateEventUpdate``), apimachinery's ``ValidateObjectMeta``, ``IsDNS1123Subdomain``,
``IsDNS1123Label``, ``IsQualifiedName``, and ``MicroTime``'s layout. Each function returns the
first broken rule as ``(field, why)``, or None.
"""

from __future__ import annotations

import re
from typing import Any

Refusal = tuple[str, str]

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)")

_FROZEN = ("regarding", "related", "reason", "note", "action", "type", "eventTime",
           "reportingController", "reportingInstance", "deprecatedSource", "deprecatedCount",
           "deprecatedFirstTimestamp", "deprecatedLastTimestamp")


def undecodable(event: dict[str, Any]) -> Refusal | None:
    """A MicroTime that does not parse (a 400, before any validation)."""
    for field, value in (("eventTime", event.get("eventTime")),
                         ("series.lastObservedTime",
                          (event.get("series") or {}).get("lastObservedTime"))):
        if value is not None and not _MICRO.fullmatch(str(value)):
            return field, f"cannot parse {value!r} as a MicroTime"
    return None


def refuse_creation(event: dict[str, Any]) -> Refusal | None:
    """The first rule ``event`` breaks to be created through events.k8s.io/v1."""
    meta = event.get("metadata") or {}
    name, namespace = meta.get("name", ""), meta.get("namespace", "")
    checks: list[tuple[bool, str, str]] = [
        (bool(name), "metadata.name", "required"),
        (len(name) <= 253 and bool(_SUBDOMAIN.fullmatch(name)), "metadata.name",
         "not a DNS subdomain"),
        (bool(namespace), "metadata.namespace", "required"),
        (len(namespace) <= 63 and bool(_LABEL.fullmatch(namespace)),
         "metadata.namespace", "not a DNS label"),
        (bool(event.get("eventTime")), "eventTime", "required"),
        (bool((event.get("regarding") or {}).get("namespace"))
         or namespace in ("default", "kube-system"), "regarding.namespace",
         "a cluster-scoped object's event must be in default or kube-system"),
        (_qualified(event.get("reportingController", "")), "reportingController",
         "not a qualified name"),
        *_sized(event),
        (event.get("type") in ("Normal", "Warning"), "type", "not Normal or Warning"),
        *((not event.get(field), field, "needs to be unset")
          for field in ("deprecatedCount", "deprecatedFirstTimestamp",
                        "deprecatedLastTimestamp")),
        (not any((event.get("deprecatedSource") or {}).values()), "deprecatedSource",
         "needs to be unset"),
    ]
    return _first(checks) or refuse_series(event)


def refuse_update(new: dict[str, Any], old: dict[str, Any]) -> Refusal | None:
    """The first rule replacing ``old`` by ``new`` breaks: nothing but the series changes."""
    for field in _FROZEN:
        if new.get(field) != old.get(field):
            return field, "field is immutable"
    if new.get("series") != old.get("series"):
        return refuse_series(new)
    return None


def refuse_series(event: dict[str, Any]) -> Refusal | None:
    series = event.get("series")
    if series is None:
        return None
    return _first([(int(series.get("count") or 0) >= 2, "series.count",
                    "should be at least 2"),
                   (bool(series.get("lastObservedTime")), "series.lastObservedTime",
                    "required")])


def _sized(event: dict[str, Any]) -> list[tuple[bool, str, str]]:
    # Go's len(): bytes of UTF-8.
    def size(field: str) -> int:
        return len(str(event.get(field) or "").encode())
    return [*((0 < size(field) <= 128, field, "required, at most 128 bytes")
              for field in ("reportingInstance", "action", "reason")),
            (size("note") <= 1024, "note", "at most 1024 bytes")]


def _qualified(value: str) -> bool:
    prefix, slash, name = value.rpartition("/")
    if "/" in prefix:
        return False
    if slash and not (prefix and len(prefix) <= 253 and _SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME_PART.fullmatch(name))


def _first(checks: list[tuple[bool, str, str]]) -> Refusal | None:
    return next(((field, why) for ok, field, why in checks if not ok), None)
