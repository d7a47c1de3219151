"""Requests to the Kubernetes REST API over the standard library's sockets (docs/decisions.md,
item 38: the Kubernetes clients on PyPI cost the daemon 7 to 23 MiB of its budget; ``ssl``
only once credentials ask for TLS: decision 56; HTTP/1.1 by :mod:`.http11`, not
``http.client``: decision 60): one NodeResourceTopology object
created and updated (:class:`TopologyApi`), and Events created and their series updated
(:class:`EventsApi`), both over an :class:`ApiConnection`.

Blocking: the daemon calls them from worker threads, never from the event loop. Every failure
is an :class:`ApiError` with a stable ``reason`` (:data:`REASONS`, :data:`EVENT_REASONS`) for
logs and metrics; nothing is retried here (the publisher and the event recorder retry with
back-off).
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal
from urllib.parse import quote

from cpuset_adapters.kubernetes.credentials import Endpoint
from cpuset_adapters.kubernetes.event_object import API_VERSION as EVENTS_API_VERSION
from cpuset_adapters.kubernetes.http11 import Connection
from cpuset_adapters.kubernetes.reasons import EVENT_REASONS, REASONS
from cpuset_adapters.kubernetes.topology_object import API_GROUP, API_VERSION, PLURAL

__all__ = ["EVENT_REASONS", "REASONS", "ApiConnection", "ApiError", "EventsApi", "TopologyApi"]

DEFAULT_TIMEOUT: Final = 5.0
"""Seconds to connect, and then for each read of the answer."""

Applied = Literal["created", "updated"]
Created = Literal["created", "exists"]

MERGE_PATCH: Final = "application/merge-patch+json"
NOT_FOUND: Final = 404
CONFLICT: Final = 409


class ApiError(Exception):
    """A request the API server refused or never answered."""

    def __init__(self, reason: str, detail: str, status: int | None = None) -> None:
        self.reason = reason
        self.detail = detail
        self.status = status
        super().__init__(f"{reason}: {detail}")


class ApiConnection:
    """Requests to the API server at ``endpoint`` over one kept-alive connection, with the
    endpoint's credentials: what :class:`TopologyApi` and the events' ``EventsApi`` share."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._endpoint = endpoint
        self._timeout = timeout
        self._connection: Connection | None = None

    @property
    def endpoint(self) -> Endpoint:
        return self._endpoint

    def request(self, method: str, path: str, body: bytes, kind: str) -> tuple[int, bytes]:
        """Send ``body`` (of content type ``kind``) and return the answer's status and body,
        whatever the status. Raises :class:`ApiError` when there is no answer (unreachable,
        timeout) or no token to send (credentials)."""
        headers = {"Content-Type": kind, "Accept": "application/json",
                   "User-Agent": "nri-cpuset"}
        try:
            token = self._endpoint.token()
        except OSError as exc:
            raise ApiError("credentials", f"cannot read the token: {exc}") from exc
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if self._connection is not None:
            # A kept-alive connection the server (or a load balancer) closed while idle fails
            # at once: that is no outage, so one fresh connection is tried before saying so.
            try:
                return self._send(method, path, body, headers)
            except TimeoutError as exc:
                raise self._timed_out(method, path) from exc
            except OSError:  # http11.HttpError too
                self.close()
        try:
            return self._send(method, path, body, headers)
        except TimeoutError as exc:
            raise self._timed_out(method, path) from exc
        except OSError as exc:  # ssl.SSLError and http11.HttpError are OSErrors
            self.close()
            raise ApiError("unreachable", f"{method} {path}: {exc or type(exc).__name__}") \
                from exc

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _timed_out(self, method: str, path: str) -> ApiError:
        self.close()  # the answer may still come: this connection is done
        return ApiError("timeout", f"{method} {path}: no answer within {self._timeout:g} s")

    def _send(self, method: str, path: str, body: bytes,
              headers: dict[str, str]) -> tuple[int, bytes]:
        # One connection, kept alive between requests; a failed one is dropped and the next
        # request connects again.
        if self._connection is None:
            endpoint = self._endpoint
            self._connection = Connection(endpoint.host, endpoint.port, timeout=self._timeout,
                                          context=endpoint.context)
        return self._connection.request(method, path, body, headers)


class TopologyApi:
    """Writes NodeResourceTopology objects to the API server at ``endpoint``."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._api = ApiConnection(endpoint, timeout=timeout)
        self._collection = f"/apis/{API_GROUP}/{API_VERSION}/{PLURAL}"

    @property
    def endpoint(self) -> Endpoint:
        return self._api.endpoint

    def apply(self, obj: dict[str, Any]) -> Applied:
        """Make the server's object equal ``obj`` in what ``obj`` says: a JSON merge patch
        (lists such as ``zones`` are replaced whole; no read, no resourceVersion), or a
        creation when there is none. Raises :class:`ApiError`."""
        path = f"{self._collection}/{quote(obj['metadata']['name'], safe='')}"
        body = json.dumps(obj, separators=(",", ":")).encode()
        request = self._api.request
        status, answer = request("PATCH", path, body, MERGE_PATCH)
        if status == NOT_FOUND:
            status, answer = request("POST", self._collection, body, "application/json")
            if status == CONFLICT:  # created meanwhile (AlreadyExists): patch it
                status, answer = request("PATCH", path, body, MERGE_PATCH)
            elif status == NOT_FOUND:
                raise ApiError("crd-missing", f"{self._collection} not found: is the "
                               "NodeResourceTopology CRD installed? " + message_of(answer), 404)
            else:
                check(status, answer)
                return "created"
        check(status, answer)
        return "updated"

    def close(self) -> None:
        self._api.close()


class EventsApi:
    """Creates ``events.k8s.io/v1`` Events and updates their series at ``endpoint``."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._api = ApiConnection(endpoint, timeout=timeout)

    @property
    def endpoint(self) -> Endpoint:
        return self._api.endpoint

    def create(self, event: dict[str, Any]) -> Created:
        """Create ``event`` in its namespace: ``"created"``, or ``"exists"`` when an event of
        its name is already there (an earlier attempt whose answer was lost made it). Raises
        :class:`ApiError` (``not-found``: the namespace is gone)."""
        path = self._collection(event["metadata"]["namespace"])
        body = json.dumps(event, separators=(",", ":")).encode()
        status, answer = self._api.request("POST", path, body, "application/json")
        if status == CONFLICT:
            return "exists"
        _check_event(status, answer)
        return "created"

    def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Apply the JSON merge ``patch`` to the event ``namespace/name``. Raises
        :class:`ApiError` (``not-found``: the event expired or was deleted)."""
        path = f"{self._collection(namespace)}/{quote(name, safe='')}"
        body = json.dumps(patch, separators=(",", ":")).encode()
        _check_event(*self._api.request("PATCH", path, body, MERGE_PATCH))

    def close(self) -> None:
        self._api.close()

    @staticmethod
    def _collection(namespace: str) -> str:
        return f"/apis/{EVENTS_API_VERSION}/namespaces/{quote(namespace, safe='')}/events"


def _check_event(status: int, answer: bytes) -> None:
    if status == NOT_FOUND:
        raise ApiError("not-found", f"HTTP 404: {message_of(answer)}", status)
    check(status, answer)


_REASON_OF_STATUS: Final = {401: "unauthorized", 403: "forbidden", 404: "crd-missing",
                            409: "conflict", 422: "invalid", 429: "server-error"}


def check(status: int, answer: bytes) -> None:
    """Raise the :class:`ApiError` an answer's ``status`` stands for, unless it is a 2xx."""
    if 200 <= status < 300:
        return
    reason = _REASON_OF_STATUS.get(status, "server-error" if status >= 500 else "error")
    raise ApiError(reason, f"HTTP {status}: {message_of(answer)}", status)


def message_of(answer: bytes) -> str:
    """The ``message`` of a Kubernetes ``Status`` answer, else the start of the body."""
    try:
        status = json.loads(answer)
    except ValueError:
        return answer[:200].decode("utf-8", "replace")
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        return str(status["message"])
    return answer[:200].decode("utf-8", "replace")
