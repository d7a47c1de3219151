"""Creating and updating one NodeResourceTopology object over the Kubernetes REST API, with the
standard library's ``http.client`` (docs/decisions.md, item 38: the Kubernetes clients on PyPI
cost the daemon 7 to 23 MiB of its 40 MiB budget; ``ssl`` and ``http.client`` it loads anyway).

Blocking: the daemon calls :meth:`TopologyApi.apply` from a worker thread, never from the event
loop. Every failure is an :class:`ApiError` with a stable ``reason`` (:data:`REASONS`) for logs
and metrics; nothing is retried here (the publisher retries with back-off).
"""

from __future__ import annotations

import http.client
import json
import ssl
from typing import Any, Final, Literal
from urllib.parse import quote

from cpuset_adapters.kubernetes.credentials import Endpoint
from cpuset_adapters.kubernetes.topology_object import API_GROUP, API_VERSION, PLURAL

DEFAULT_TIMEOUT: Final = 5.0
"""Seconds to connect, and then for each read of the answer."""

REASONS: Final = ("unreachable", "timeout", "unauthorized", "forbidden", "crd-missing",
                  "conflict", "invalid", "server-error", "credentials", "error")
"""Why a request failed: no connection (refused, reset, TLS), no answer in time, 401, 403,
404 for the collection (the CRD is not installed), 409, 422, 429 or 5xx, the token could not be
read, anything else."""

Applied = Literal["created", "updated"]


class ApiError(Exception):
    """A request the API server refused or never answered."""

    def __init__(self, reason: str, detail: str, status: int | None = None) -> None:
        self.reason = reason
        self.detail = detail
        self.status = status
        super().__init__(f"{reason}: {detail}")


class TopologyApi:
    """Writes NodeResourceTopology objects to the API server at ``endpoint``."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._endpoint = endpoint
        self._timeout = timeout
        self._connection: http.client.HTTPConnection | None = None
        self._collection = f"/apis/{API_GROUP}/{API_VERSION}/{PLURAL}"

    @property
    def endpoint(self) -> Endpoint:
        return self._endpoint

    def apply(self, obj: dict[str, Any]) -> Applied:
        """Make the server's object equal ``obj`` in what ``obj`` says: a JSON merge patch
        (lists such as ``zones`` are replaced whole; no read, no resourceVersion), or a
        creation when there is none. Raises :class:`ApiError`."""
        path = f"{self._collection}/{quote(obj['metadata']['name'], safe='')}"
        body = json.dumps(obj, separators=(",", ":")).encode()
        status, answer = self._request("PATCH", path, body, "application/merge-patch+json")
        if status == http.client.NOT_FOUND:
            status, answer = self._request("POST", self._collection, body, "application/json")
            if status == http.client.CONFLICT:  # created meanwhile (AlreadyExists): patch it
                status, answer = self._request("PATCH", path, body,
                                               "application/merge-patch+json")
            elif status == http.client.NOT_FOUND:
                raise ApiError("crd-missing", f"{self._collection} not found: is the "
                               "NodeResourceTopology CRD installed? " + _message(answer), 404)
            else:
                _check(status, answer)
                return "created"
        _check(status, answer)
        return "updated"

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _request(self, method: str, path: str, body: bytes, kind: str) -> tuple[int, bytes]:
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
            except (OSError, http.client.HTTPException):
                self.close()
        try:
            return self._send(method, path, body, headers)
        except TimeoutError as exc:
            raise self._timed_out(method, path) from exc
        except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
            self.close()
            raise ApiError("unreachable", f"{method} {path}: {exc or type(exc).__name__}") \
                from exc

    def _timed_out(self, method: str, path: str) -> ApiError:
        self.close()  # the answer may still come: this connection is done
        return ApiError("timeout", f"{method} {path}: no answer within {self._timeout:g} s")

    def _send(self, method: str, path: str, body: bytes,
              headers: dict[str, str]) -> tuple[int, bytes]:
        connection = self._connect()
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()

    def _connect(self) -> http.client.HTTPConnection:
        # One connection, kept alive between publishes; a failed one is dropped and the next
        # request connects again.
        if self._connection is None:
            endpoint = self._endpoint
            if endpoint.context is None:
                self._connection = http.client.HTTPConnection(endpoint.host, endpoint.port,
                                                              timeout=self._timeout)
            else:
                self._connection = http.client.HTTPSConnection(
                    endpoint.host, endpoint.port, timeout=self._timeout,
                    context=endpoint.context)
        return self._connection


_REASON_OF_STATUS: Final = {401: "unauthorized", 403: "forbidden", 404: "crd-missing",
                            409: "conflict", 422: "invalid", 429: "server-error"}


def _check(status: int, answer: bytes) -> None:
    if 200 <= status < 300:
        return
    reason = _REASON_OF_STATUS.get(status, "server-error" if status >= 500 else "error")
    raise ApiError(reason, f"HTTP {status}: {_message(answer)}", status)


def _message(answer: bytes) -> str:
    """The ``message`` of a Kubernetes ``Status`` answer, else the start of the body."""
    try:
        status = json.loads(answer)
    except ValueError:
        return answer[:200].decode("utf-8", "replace")
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        return str(status["message"])
    return answer[:200].decode("utf-8", "replace")
