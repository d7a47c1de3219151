"""The API server's rules for an ``events.k8s.io/v1`` Event, as data the plugin checks its own
events against before sending them (an event the server would refuse is a defect here, not a
failure to retry).

Sources, all in kubernetes/kubernetes (read at master, 2026):

* ``pkg/apis/core/validation/events.go``: ``ValidateEventCreate`` (``legacyValidateEvent``,
  then, for events.k8s.io/v1, ``ValidateObjectMeta`` with ``NameIsDNSSubdomain``,
  ``validateV1EventSeries`` and the checks below it) and ``ValidateEventUpdate``; the limits
  ``ReportingInstanceLengthLimit``, ``ActionLengthLimit``, ``ReasonLengthLimit`` (128) and
  ``NoteLengthLimit`` (1024), compared with Go's ``len``: bytes of UTF-8.
* ``staging/.../apimachinery/pkg/api/validation/objectmeta.go``: name required, namespace
  required and a DNS label (``ValidateNamespaceName``).
* ``staging/.../apimachinery/pkg/util/validation/validation.go`` and
  ``.../api/validate/content/kube.go``: ``IsDNS1123Subdomain``, ``IsDNS1123Label``,
  ``IsQualifiedName`` (= ``IsLabelKey``).
* ``staging/.../apimachinery/pkg/apis/meta/v1/micro_time.go``: a MicroTime is parsed with the
  layout ``2006-01-02T15:04:05.000000Z07:00`` (Go's ``time.Parse`` takes exactly as many
  fraction digits as the layout has); a time that does not parse is refused while decoding
  (400), before validation (422).

The events.k8s.io/v1 fields map onto the core Event the rules are written for: ``regarding`` is
``involvedObject``, ``note`` is ``message``, ``deprecatedCount``/``deprecatedSource``/
``deprecatedFirstTimestamp``/``deprecatedLastTimestamp`` are ``count``/``source``/
``firstTimestamp``/``lastTimestamp``.

Not encoded (the plugin sets none of them): labels, annotations, owner references, finalizers
and managed fields of ``metadata``, and ``related``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

NAME_LIMIT: Final = 253  # DNS1123SubdomainMaxLength
NAMESPACE_LIMIT: Final = 63  # DNS1123LabelMaxLength
QUALIFIED_NAME_LIMIT: Final = 63  # labelKeyMaxLength (the part after the prefix)
TEXT_LIMIT: Final = 128  # ReportingInstance/Action/ReasonLengthLimit
NOTE_LIMIT: Final = 1024  # NoteLengthLimit
TYPES: Final = ("Normal", "Warning")  # v1.EventTypeNormal, v1.EventTypeWarning

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"  # dns1123LabelFmt
_DNS_LABEL: Final = re.compile(f"{_LABEL}")
_DNS_SUBDOMAIN: Final = re.compile(rf"{_LABEL}(\.{_LABEL})*")  # dns1123SubdomainFmt
_QUALIFIED: Final = re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")  # labelKeyFmt
_MICRO_TIME: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)")

# ValidateEventUpdate: every one of these must be what the stored event has.
IMMUTABLE: Final = ("regarding", "reason", "note", "deprecatedSource",
                    "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount",
                    "type", "eventTime", "action", "related", "reportingController",
                    "reportingInstance")


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule an event breaks: the field, as the API server names it, and why."""

    field: str
    detail: str

    def __str__(self) -> str:
        return f"{self.field}: {self.detail}"


def creation_violations(event: Mapping[str, Any]) -> list[Violation]:
    """Return what the API server would refuse in creating ``event`` (an events.k8s.io/v1
    Event as JSON) through events.k8s.io/v1; empty when it would accept it."""
    found = _decoding(event)
    found += _legacy(event)
    found += _metadata(event.get("metadata") or {})
    found += _series(event)
    if not event.get("eventTime"):
        found.append(Violation("eventTime", "required"))
    if event.get("type") not in TYPES:
        found.append(Violation("type", f"has invalid value: {event.get('type')!r}, "
                                       f"must be one of {', '.join(TYPES)}"))
    for deprecated in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
        if event.get(deprecated):
            found.append(Violation(deprecated, "needs to be unset"))
    if event.get("deprecatedCount"):
        found.append(Violation("deprecatedCount", "needs to be unset"))
    source = event.get("deprecatedSource") or {}
    if source.get("component") or source.get("host"):
        found.append(Violation("deprecatedSource", "needs to be unset"))
    return found


def update_violations(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Violation]:
    """Return what the API server would refuse in replacing the stored ``old`` by ``new`` (the
    result of a patch) through events.k8s.io/v1: the series only when it changed, and every
    other field of the event unchanged."""
    found = _decoding(new) + _legacy(new)
    if new.get("series") != old.get("series"):
        found += _series(new)
    found += [Violation(name, "field is immutable") for name in IMMUTABLE
              if new.get(name) != old.get(name)]
    new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
    found += [Violation(f"metadata.{name}", "field is immutable")
              for name in ("name", "namespace", "uid") if new_meta.get(name) != old_meta.get(name)]
    return found


def _decoding(event: Mapping[str, Any]) -> list[Violation]:
    """MicroTime fields that would not even decode (micro_time.go)."""
    times = {"eventTime": event.get("eventTime"),
             "series.lastObservedTime": (event.get("series") or {}).get("lastObservedTime")}
    return [Violation(name, f"{value!r} is not a MicroTime (2006-01-02T15:04:05.000000Z07:00)")
            for name, value in times.items()
            if value is not None and not (isinstance(value, str) and _MICRO_TIME.fullmatch(value))]


def _legacy(event: Mapping[str, Any]) -> list[Violation]:
    """legacyValidateEvent, for an event with an eventTime (events.k8s.io/v1 requires one)."""
    found: list[Violation] = []
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    regarding_namespace = (event.get("regarding") or {}).get("namespace") or ""
    if event.get("eventTime"):
        # A namespaced object's event may be in any namespace; a cluster-scoped one's (a
        # Node's) only in default or kube-system.
        if not regarding_namespace and namespace not in ("default", "kube-system"):
            found.append(Violation("regarding.namespace", f"{regarding_namespace!r} does not "
                                   f"match event.namespace {namespace!r}"))
    elif regarding_namespace != namespace and (regarding_namespace or namespace != "default"):
        # Without an eventTime the namespaces must agree (events.k8s.io/v1 then also refuses
        # the missing eventTime itself).
        found.append(Violation("regarding.namespace", f"{regarding_namespace!r} does not match "
                               f"event.namespace {namespace!r}"))
    if event.get("eventTime"):  # the reporting fields are checked only on a new-style event
        found += _reporting(event)
    found += [Violation("metadata.namespace", f"{namespace!r}: {message}")
              for message in dns_subdomain_errors(namespace)]
    return found


def _reporting(event: Mapping[str, Any]) -> list[Violation]:
    found: list[Violation] = []
    controller = event.get("reportingController") or ""
    if not controller:
        found.append(Violation("reportingController", "required"))
    else:
        found += [Violation("reportingController", f"{controller!r}: {message}")
                  for message in qualified_name_errors(controller)]
    for name, limit in (("reportingInstance", TEXT_LIMIT), ("action", TEXT_LIMIT),
                        ("reason", TEXT_LIMIT)):
        found += _text(event, name, limit, required=True)
    return found + _text(event, "note", NOTE_LIMIT, required=False)


def _text(event: Mapping[str, Any], name: str, limit: int, *,
          required: bool) -> list[Violation]:
    value = event.get(name) or ""
    if not value:
        return [Violation(name, "required")] if required else []
    size = len(str(value).encode())
    if size > limit:
        return [Violation(name, f"can have at most {limit} characters (bytes of UTF-8), "
                                f"has {size}")]
    return []


def _metadata(metadata: Mapping[str, Any]) -> list[Violation]:
    """ValidateObjectMeta(requiresNamespace=true, NameIsDNSSubdomain)."""
    found: list[Violation] = []
    name, namespace = metadata.get("name") or "", metadata.get("namespace") or ""
    if not name:
        found.append(Violation("metadata.name", "name or generateName is required"))
    else:
        found += [Violation("metadata.name", f"{name!r}: {message}")
                  for message in dns_subdomain_errors(name)]
    if not namespace:
        found.append(Violation("metadata.namespace", "required"))
    else:
        found += [Violation("metadata.namespace", f"{namespace!r}: {message}")
                  for message in dns_label_errors(namespace)]
    return found


def _series(event: Mapping[str, Any]) -> list[Violation]:
    """validateV1EventSeries: a series counts at least 2 and says when it was last seen."""
    series = event.get("series")
    if series is None:
        return []
    found: list[Violation] = []
    if not isinstance(series.get("count"), int) or series["count"] < 2:
        found.append(Violation("series.count", f"should be at least 2, is {series.get('count')}"))
    if not series.get("lastObservedTime"):
        found.append(Violation("series.lastObservedTime", "required"))
    return found


def dns_subdomain_errors(value: str) -> list[str]:
    """IsDNS1123Subdomain."""
    found = [f"must be no more than {NAME_LIMIT} characters"] if len(value) > NAME_LIMIT else []
    if not _DNS_SUBDOMAIN.fullmatch(value):
        found.append("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                     "characters, '-' or '.', and must start and end with an alphanumeric "
                     "character")
    return found


def dns_label_errors(value: str) -> list[str]:
    """IsDNS1123Label (ValidateNamespaceName)."""
    found = ([f"must be no more than {NAMESPACE_LIMIT} characters"]
             if len(value) > NAMESPACE_LIMIT else [])
    if not _DNS_LABEL.fullmatch(value):
        found.append("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                     "characters or '-', and must start and end with an alphanumeric character")
    return found


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName: ``[prefix/]name``, the prefix a DNS subdomain, the name at most 63
    characters of ``[A-Za-z0-9][-A-Za-z0-9_.]*`` ending alphanumeric."""
    parts = value.split("/")
    if len(parts) > 2:  # a prefix and a name at most
        return ["a qualified name has at most one '/' (e.g. 'example.com/MyName')"]
    found: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        found += (["prefix part must be non-empty"] if not prefix else
                  [f"prefix part {message}" for message in dns_subdomain_errors(prefix)])
    name = parts[-1]
    if not name:
        found.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_LIMIT:
        found.append(f"name part must be no more than {QUALIFIED_NAME_LIMIT} characters")
    if name and not _QUALIFIED.fullmatch(name):
        found.append("name part must consist of alphanumeric characters, '-', '_' or '.', and "
                     "must start and end with an alphanumeric character")
    return found
