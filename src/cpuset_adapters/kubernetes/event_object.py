"""The Kubernetes Events the plugin writes (``events.k8s.io/v1``), built from small frozen
values: pure, no I/O, the same inputs always give the same object.

The shape is the kubelet's (client-go ``tools/events``, ``recorderImpl.makeEvent``): the event
is named ``<regarding name>.<unix nanoseconds in hex>`` and lives in the regarding object's
namespace, or in ``default`` for a cluster-scoped one (a Node); ``regarding`` names the Pod with
its uid and, for a container, ``fieldPath`` ``spec.containers{<name>}``; ``reportingController``
is the plugin and ``reportingInstance`` the node. A repeat is not a new object but a ``series``
update of the first (:func:`series_patch`). Every string is kept within the API server's limits
here (:mod:`cpuset_adapters.kubernetes.event_rules` checks them), so an event is never refused
for its length.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal

API_VERSION: Final = "events.k8s.io/v1"
KIND: Final = "Event"

REPORTING_CONTROLLER: Final = "weka.io/nri-cpuset"
"""A qualified name (the API server checks it as one), with the project's annotation prefix."""

NAME_LIMIT: Final = 253
"""metadata.name is a DNS subdomain: at most 253 characters."""
TEXT_LIMIT: Final = 128
"""reportingInstance, action and reason: at most 128 bytes each."""
NOTE_LIMIT: Final = 1024
"""note: at most 1 KiB (the API server counts bytes of UTF-8, Go's ``len``)."""

EventType = Literal["Normal", "Warning"]
JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Regarding:
    """The object an event is about: a Pod (a container of it when ``field_path`` is set), or
    the Node (cluster-scoped: ``namespace`` empty)."""

    kind: str
    name: str
    uid: str
    namespace: str = ""
    api_version: str = "v1"
    field_path: str = ""

    def reference(self) -> JsonObject:
        """The ``ObjectReference`` the API expects, without the empty fields."""
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name,
               "namespace": self.namespace, "uid": self.uid, "fieldPath": self.field_path}
        return {key: value for key, value in ref.items() if value}


def container(*, namespace: str, pod: str, pod_uid: str, name: str) -> Regarding:
    """The container ``name`` of a pod, as the kubelet refers to it."""
    return Regarding(kind="Pod", namespace=namespace, name=pod, uid=pod_uid,
                     field_path=f"spec.containers{{{name}}}")


def node(name: str) -> Regarding:
    """The node ``name``. Its uid is its name, as the kubelet's own node reference has it: the
    plugin cannot read Nodes (no RBAC for it), and the uid only keys the aggregation here."""
    return Regarding(kind="Node", name=name, uid=name)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementEvent:
    """What happened, in the API's words: ``reason`` (a short UpperCamelCase word, the same for
    every event of one kind), ``action`` (what the plugin did), ``note`` (for people) and
    ``type`` (Warning for what an operator should look at)."""

    regarding: Regarding
    reason: str
    action: str
    note: str
    type: EventType = "Normal"

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What makes two events the same occurrence repeated (they aggregate into a series):
        the object, the container, the reason and the note. The note is in the key, unlike
        client-go's, because a series keeps its first event's note: a container moved twice,
        or a pool changed twice, must tell where it went each time (decision 49)."""
        return (self.regarding.uid, self.regarding.field_path, self.reason, self.note)


def build_event(event: PlacementEvent, *, instance: str, at: datetime) -> JsonObject:
    """Return the ``events.k8s.io/v1`` Event for ``event`` observed at ``at`` (timezone-aware),
    reported by the plugin on node ``instance``. Over-long strings are cut to the API's limits
    (the note at a UTF-8 character boundary)."""
    regarding, event_time = event.regarding, micro_time(at)  # refuses a naive time first
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": event_name(regarding.name, at),
                     "namespace": regarding.namespace or "default"},
        "regarding": regarding.reference(),
        "reportingController": REPORTING_CONTROLLER,
        "reportingInstance": truncate_utf8(instance, TEXT_LIMIT),
        "action": truncate_utf8(event.action, TEXT_LIMIT),
        "reason": truncate_utf8(event.reason, TEXT_LIMIT),
        "note": truncate_utf8(event.note, NOTE_LIMIT),
        "type": event.type,
        "eventTime": event_time,
    }


def series_patch(*, count: int, last_observed: datetime) -> JsonObject:
    """The JSON merge patch that turns an event into a series of ``count`` occurrences, the
    last at ``last_observed``. Nothing else may change: the API server refuses an update of any
    other field of an event (``ValidateEventUpdate``)."""
    return {"series": {"count": count, "lastObservedTime": micro_time(last_observed)}}


def event_name(regarding_name: str, at: datetime) -> str:
    """``<regarding name>.<unix nanoseconds of at, in hex>``, the kubelet's naming, with the
    prefix shortened when the whole would pass the 253 characters of a DNS subdomain (a pod
    name may use them all) and never ending in ``-`` or ``.`` where it is cut."""
    suffix = f".{_unix_nanoseconds(at):x}"
    prefix = regarding_name[:NAME_LIMIT - len(suffix)]
    if len(prefix) < len(regarding_name):
        prefix = prefix.rstrip("-.")
    return prefix + suffix


def micro_time(at: datetime) -> str:
    """``at`` as a Kubernetes MicroTime: RFC 3339 in UTC with exactly six fraction digits (the
    API server parses the layout ``2006-01-02T15:04:05.000000Z07:00``, which takes no other
    count of digits). Raises ``ValueError`` for a naive datetime (its zone is unknown)."""
    if at.tzinfo is None:
        raise ValueError(f"a timezone-aware time is needed, got {at!r}")
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def truncate_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, never inside a character; an ellipsis
    marks the cut when there is room for it."""
    data = text.encode()
    if len(data) <= limit:
        return text
    mark = "…".encode()
    room = limit - len(mark) if limit > len(mark) else limit
    # errors="ignore" drops the partial character the byte cut may leave at the end.
    cut = data[:room].decode(errors="ignore")
    return cut + "…" if room < limit else cut


def _unix_nanoseconds(at: datetime) -> int:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    delta = at - epoch
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
