"""An allocation trace (``nri-cpuset simulate``'s input): its format, read and validated whole.

The trace format (issue 4)::

    {"events": [{"op": "add", "id": 7, "request": 4},
                {"op": "add", "id": 8, "request": 2, "pinned": "0-1"},
                {"op": "add", "id": 9, "request": 2, "devices": "1"},
                {"op": "del", "id": 7}]}

* ``add`` without ``pinned`` is an integer container asking for ``request`` exclusive CPUs:
  a Guaranteed pod whose CPU limit is ``request`` × the CFS period;
* ``add`` with ``pinned`` (a Linux CPU list) is an annotated pod pinned to those CPUs;
  ``request`` is optional for it and informational only;
* ``devices`` (optional, on either ``add``) is a list of NUMA nodes: where the container's
  devices are, as the plugin reads them from sysfs on a node (its device hint);
* ``millis`` (optional, instead of ``request``) is a Guaranteed container's CPU limit in
  millicores (``2500``: a fraction, shared unless its pod asks ``mixed-cpus``);
* ``namespace`` and ``annotations`` (optional) are its pod's (default ``simulate``, none): the
  workload annotations (``reserved-cpus.nri-cpuset.io/pod``, ...) and the reserved
  namespaces act as on a node;
* ``del`` removes a container.

A trace is validated as a whole before anything runs, independently of admission outcomes (so
the same trace can be replayed against any policy): an ``add`` may not reuse an id that is still
added, a ``del`` must name one that is. A ``del`` of a container whose ``add`` was rejected is
then a no-op.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cpuset_core import EMPTY, CpuListSyntaxError, CPUSet

_ADD_KEYS = frozenset({"op", "id", "request", "pinned", "devices", "millis", "namespace",
                       "annotations"})
_DEL_KEYS = frozenset({"op", "id"})


class TraceError(ValueError):
    """A trace that cannot be replayed; the message names the file and the event index."""

    def __init__(self, source: str, index: int | None, problem: str) -> None:
        self.source = source
        self.index = index
        self.problem = problem
        where = f"{source}: event {index}" if index is not None else source
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True, slots=True)
class AddEvent:
    index: int
    id: int
    request: int | None
    """CPUs asked for; ``None`` only for a pinned add that did not say."""
    pinned: CPUSet | None = None
    devices: CPUSet = EMPTY
    """The NUMA nodes of its devices (empty: none)."""
    millis: int | None = None
    """A CPU limit in millicores given instead of ``request`` (a fraction of a CPU)."""
    namespace: str = "simulate"
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def integer(self) -> bool:
        return self.pinned is None


@dataclass(frozen=True, slots=True)
class DelEvent:
    index: int
    id: int


Event = AddEvent | DelEvent


# -- reading -----------------------------------------------------------------------------------


def read_trace(path: str | Path) -> tuple[Event, ...]:
    """Read and validate a trace file; raises :class:`TraceError` (or ``OSError``)."""
    source = str(path)
    text = Path(path).read_text(encoding="utf-8")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(source, None, f"not JSON: {exc.msg} at line {exc.lineno} "
                                       f"column {exc.colno}") from exc
    return parse_trace(document, source=source)


def parse_trace(document: object, *, source: str = "<trace>") -> tuple[Event, ...]:
    """Validate a decoded trace document and return its events."""
    if not isinstance(document, dict):
        raise TraceError(source, None, f"the top level must be an object with \"events\", "
                                       f"not {_kind(document)}")
    extra = sorted(set(document) - {"events"})
    if extra:
        raise TraceError(source, None, f"unknown top-level key(s) {', '.join(map(repr, extra))} "
                                       f"(only \"events\" is allowed)")
    if "events" not in document:
        raise TraceError(source, None, "missing \"events\"")
    raw_events = document["events"]
    if not isinstance(raw_events, list):
        raise TraceError(source, None, f"\"events\" must be a list, not {_kind(raw_events)}")
    events: list[Event] = []
    live: set[int] = set()
    for index, raw in enumerate(raw_events):
        event = _event(raw, index, source)
        if isinstance(event, AddEvent):
            if event.id in live:
                raise TraceError(source, index, f"duplicate id {event.id}: it was added and "
                                                f"not deleted yet")
            live.add(event.id)
        else:
            if event.id not in live:
                raise TraceError(source, index, f"del of unknown id {event.id} (never added, "
                                                f"or already deleted)")
            live.discard(event.id)
        events.append(event)
    return tuple(events)


def _event(raw: object, index: int, source: str) -> Event:
    def fail(problem: str) -> TraceError:
        return TraceError(source, index, problem)

    if not isinstance(raw, dict):
        raise fail(f"an event must be an object, not {_kind(raw)}")
    if "op" not in raw:
        raise fail("missing \"op\" (\"add\" or \"del\")")
    op = raw["op"]
    if op not in ("add", "del"):
        raise fail(f"unknown op {op!r} (expected \"add\" or \"del\")")
    allowed = _ADD_KEYS if op == "add" else _DEL_KEYS
    extra = sorted(set(raw) - allowed)
    if extra:
        raise fail(f"unknown key(s) {', '.join(map(repr, extra))} for op {op!r} "
                   f"(allowed: {', '.join(sorted(allowed))})")
    ident = _natural(raw, "id", fail, minimum=0)
    if op == "del":
        return DelEvent(index, ident)
    pinned = _cpu_list(raw, "pinned", fail) if "pinned" in raw else None
    devices = _cpu_list(raw, "devices", fail) if "devices" in raw else EMPTY
    pod = _pod_fields(raw, fail)
    if "millis" in raw:
        if "request" in raw or pinned is not None:
            raise fail("\"millis\" is a CPU limit given instead of \"request\", for a pod "
                       "that is not pinned")
        millis = _natural(raw, "millis", fail, minimum=1)
        return AddEvent(index, ident, None, None, devices, millis, *pod)
    if "request" not in raw:
        if pinned is None:
            raise fail("missing \"request\" (the number of exclusive CPUs) or \"millis\"")
        return AddEvent(index, ident, None, pinned, devices, None, *pod)
    return AddEvent(index, ident, _natural(raw, "request", fail, minimum=1), pinned, devices,
                    None, *pod)


def _pod_fields(raw: Mapping[str, object],
                fail: Callable[[str], TraceError]) -> tuple[str, Mapping[str, str]]:
    """The pod's namespace and annotations an ``add`` names (defaults: ``simulate``, none)."""
    namespace = raw.get("namespace", "simulate")
    if not isinstance(namespace, str) or not namespace:
        raise fail(f"\"namespace\" must be a non-empty string, not {_kind(namespace)}")
    annotations = raw.get("annotations", {})
    if not isinstance(annotations, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in annotations.items()):
        raise fail(f"\"annotations\" must be an object of strings, not {_kind(annotations)}")
    return namespace, dict(annotations)


def _cpu_list(raw: Mapping[str, object], key: str, fail: Callable[[str], TraceError]) -> CPUSet:
    text = raw[key]
    if not isinstance(text, str):
        what = "CPU" if key == "pinned" else "NUMA node"
        raise fail(f"\"{key}\" must be a {what} list string like \"0-1,8\", not {_kind(text)}")
    try:
        return CPUSet.parse(text)
    except CpuListSyntaxError as exc:
        raise fail(f"bad \"{key}\" list {text!r}: {exc.problem} at position "
                   f"{exc.position}") from exc


def _natural(raw: Mapping[str, object], key: str, fail: Callable[[str], TraceError], *,
             minimum: int) -> int:
    if key not in raw:
        raise fail(f"missing \"{key}\"")
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(f"\"{key}\" must be an integer, not {_kind(value)}")
    if value < minimum:
        raise fail(f"\"{key}\" must be at least {minimum}, got {value}")
    return value


_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
               int: "an integer", float: "a number"}


def _kind(value: object) -> str:
    """Describe a JSON value for an error message: its type, and the value when it is short."""
    if value is None:
        return "null"
    name = _TYPE_NAMES.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)):
        return name
    shown = json.dumps(value)
    return f"{name} {shown if len(shown) <= 40 else shown[:37] + '...'}"
