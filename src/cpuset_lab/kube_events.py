"""The events collection of the lab's fake API server (``kube_api``):
``/apis/events.k8s.io/v1/namespaces/<ns>/events`` answers POST, PATCH by name (JSON merge
patch), GET by name and GET of the list, refusing what the real server refuses
(``kube_event_rules``): 400 for a time that does not decode or a namespace other than the
URL's, 422 for an invalid event or update, 409 for a name taken, 404 for a missing event, 415
for a patch type it does not take. A created event gets a uid, a resourceVersion and a
creationTimestamp, as from the real server."""

from __future__ import annotations

import copy
import itertools
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from cpuset_lab.kube_event_rules import refuse_creation, refuse_update, undecodable

PREFIX = "/apis/events.k8s.io/v1/namespaces/"
_PATH = re.compile(r"/apis/events\.k8s\.io/v1/namespaces/([^/]+)/events(?:/([^/]+))?")

Answer = tuple[int, dict[str, Any]]
Store = dict[tuple[str, str], dict[str, Any]]
Merge = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]

_VERSIONS = itertools.count(1)


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    """A Kubernetes ``Status`` answer."""
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message}


def handle(method: str, path: str, content_type: str, body: dict[str, Any] | None, *,
           events: Store, merge: Merge) -> Answer:
    """Answer one request under :data:`PREFIX` against ``events`` (by namespace and name);
    the caller holds the lock."""
    match = _PATH.fullmatch(path.split("?", 1)[0])
    if match is None:
        return 404, status(404, "NotFound", f"no such path {path}")
    namespace, name = match.group(1), match.group(2)
    if method == "GET":
        return _get(events, namespace, name)
    if body is None:
        return 400, status(400, "BadRequest", "no body")
    if method == "POST" and name is None:
        return _create(events, namespace, body)
    if method == "PATCH" and name is not None:
        return _patch(events, (namespace, name), content_type, body, merge)
    return 405, status(405, "MethodNotAllowed", f"{method} {path}")


def _get(events: Store, namespace: str, name: str | None) -> Answer:
    if name is None:
        items = [event for (ns, _), event in sorted(events.items()) if ns == namespace]
        return 200, {"kind": "EventList", "apiVersion": "events.k8s.io/v1", "items": items}
    if (namespace, name) not in events:
        return 404, status(404, "NotFound", f'events.events.k8s.io "{name}" not found')
    return 200, events[namespace, name]


def _create(events: Store, namespace: str, body: dict[str, Any]) -> Answer:
    event = copy.deepcopy(body)
    meta = event.setdefault("metadata", {})
    if meta.setdefault("namespace", namespace) != namespace:
        return 400, status(400, "BadRequest", "the namespace of the provided object does not "
                           "match the namespace sent on the request")
    if refusal := undecodable(event):
        return 400, status(400, "BadRequest", f"{refusal[0]}: {refusal[1]}")
    name = meta.get("name", "")
    if refusal := refuse_creation(event):
        return 422, _invalid(name, refusal)
    if (namespace, name) in events:
        return 409, status(409, "AlreadyExists", f'events.events.k8s.io "{name}" already exists')
    # What the server adds to every object it creates.
    meta.update(uid=str(uuid.uuid4()), resourceVersion=str(next(_VERSIONS)),
                creationTimestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    events[namespace, name] = event
    return 201, event


def _patch(events: Store, key: tuple[str, str], content_type: str, body: dict[str, Any],
           merge: Merge) -> Answer:
    name = key[1]
    if content_type != "application/merge-patch+json":
        return 415, status(415, "UnsupportedMediaType", f"{content_type} not taken here")
    old = events.get(key)
    if old is None:
        return 404, status(404, "NotFound", f'events.events.k8s.io "{name}" not found')
    new = merge(old, body)
    if refusal := undecodable(new):
        return 400, status(400, "BadRequest", f"{refusal[0]}: {refusal[1]}")
    if refusal := refuse_update(new, old):
        return 422, _invalid(name, refusal)
    new["metadata"] = {**new.get("metadata", {}), "resourceVersion": str(next(_VERSIONS))}
    events[key] = new
    return 200, new


def _invalid(name: str, refusal: tuple[str, str]) -> dict[str, Any]:
    field, why = refusal
    return status(422, "Invalid", f'Event.events.k8s.io "{name}" is invalid: {field}: {why}')
