"""A fake Kubernetes API server for NodeResourceTopology objects, on 127.0.0.1 in a thread
(the topology publisher's tests and the dense-node bench).

It keeps objects by name and answers PATCH (JSON merge patch), POST and GET under
``/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies`` like the real one, or fails on
purpose (``mode``): ``forbidden`` (403 to everything), ``crd-missing`` (404 to everything),
``conflict`` (409 to everything), ``slow`` (answers after ``release`` is set), ``server-error``
(500), ``created-meanwhile`` (the first PATCH finds no object, which another writer then
creates), ``drop-idle`` (every connection closed after its answer, without saying so, as an
idle keep-alive connection a load balancer drops). It records every request (method, path,
content type, token, body). TLS when given a certificate and its key.

It also serves Events (``/apis/events.k8s.io/v1/namespaces/<ns>/events``: ``kube_events``),
kept in ``events`` by namespace and name, refusing with 422 what the real server finds invalid
(``kube_event_rules``); the failure modes apply to them alike. For kubectl it serves discovery
(``kube_discovery``), the Pods the lab tells it of (``add_pod``; ``kube_pods``) and the events
in core/v1 (``/api/v1/.../events``: ``kube_core_events``, with field selectors and a Table).
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cpuset_lab import kube_core_events, kube_discovery, kube_events, kube_pods

COLLECTION = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"


@dataclass
class Request:
    method: str
    path: str
    content_type: str
    token: str
    body: dict[str, Any] | None


@dataclass
class FakeApi:
    """State shared with the handler threads."""

    mode: str = "ok"
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def methods(self) -> list[str]:
        with self.lock:
            return [r.method for r in self.requests]

    def add_pod(self, pod: dict[str, Any]) -> None:
        """Know ``pod`` (a v1 Pod: ``kube_pods.pod_object``) from now on."""
        meta = pod["metadata"]
        with self.lock:
            self.pods[meta["namespace"], meta["name"]] = pod

    def remove_pod(self, namespace: str, name: str) -> None:
        with self.lock:
            self.pods.pop((namespace, name), None)


_FAILURES = {"forbidden": (403, "Forbidden"), "crd-missing": (404, "NotFound"),
             "conflict": (409, "Conflict"), "server-error": (500, "InternalError")}


_status = kube_events.status


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real server
    api: FakeApi

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # A client that gave up waiting (the ``slow`` mode outlasts every client's
            # timeout) is not the fake's failure: no traceback on the run's stderr.
            self.close_connection = True

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        api = self.api
        with api.lock:
            api.requests.append(Request(self.command, self.path,
                                        self.headers.get("Content-Type") or "", token, body))
        if api.mode == "slow":
            api.release.wait(30)
        if api.mode in _FAILURES:
            code, reason = _FAILURES[api.mode]
            self._answer(code, _status(code, reason, f"fake {reason}"))
            return
        if self.command == "GET" and (answer := _view(api, self.path,
                                                      self.headers.get("Accept") or "")):
            self._answer(*answer)
        elif self.path.startswith(kube_events.PREFIX):
            with api.lock:
                self._answer(*kube_events.handle(self.command, self.path,
                                                 self.headers.get("Content-Type") or "", body,
                                                 events=api.events, merge=_merge))
        elif api.mode == "created-meanwhile" and self.command == "PATCH" and body is not None:
            api.mode = "ok"
            self._answer(404, _status(404, "NotFound", "not yet"))
            with api.lock:
                api.objects[body["metadata"]["name"]] = body
            return
        else:
            self._store(body)
        if api.mode == "drop-idle":
            self.close_connection = True

    def _store(self, body: dict[str, Any] | None) -> None:
        api = self.api
        name = self.path.removeprefix(COLLECTION).strip("/")
        with api.lock:
            if self.command == "POST" and body is not None:
                name = body["metadata"]["name"]
                if name in api.objects:
                    self._answer(409, _status(409, "AlreadyExists", "exists"))
                    return
                api.objects[name] = body
                self._answer(201, body)
            elif name not in api.objects:
                self._answer(404, _status(404, "NotFound", f"{name} not found"))
            elif self.command == "PATCH" and body is not None:
                api.objects[name] = _merge(api.objects[name], body)
                self._answer(200, api.objects[name])
            else:
                self._answer(200, api.objects[name])

    # http.server dispatches on these names.
    do_GET = do_POST = do_PATCH = do_PUT = _handle  # noqa: N815


def _view(api: FakeApi, path: str, accept: str) -> kube_events.Answer | None:
    """The answer to a GET of discovery, pods or core/v1 events; None for any other path."""
    if (document := kube_discovery.document(path)) is not None:
        return 200, document
    with api.lock:
        if kube_pods.is_pods(path):
            return kube_pods.handle(path, api.pods)
        if kube_core_events.is_core_events(path):
            return kube_core_events.handle(path, accept, api.events)
    return None


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386: objects merge key by key, anything else replaces."""
    merged = dict(target)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@contextmanager
def serve(mode: str = "ok", *, tls: tuple[Path, Path] | None = None) -> Iterator[FakeApi]:
    """Run a fake API server until the block ends; its port is ``api.port``; ``tls``: the
    certificate and key to serve HTTPS with."""
    api = FakeApi(mode=mode)
    handler = type("Handler", (_Handler,), {"api": api})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    api.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield api
    finally:
        api.release.set()
        server.shutdown()
        server.server_close()


def write_kubeconfig(path: Path, api: FakeApi, token: str = "lab") -> Path:  # noqa: S107 - a fake
    """A kubeconfig for the plain-HTTP fake at ``api`` (what ``topology_publisher.kubeconfig``
    names in a lab run)."""
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        f"clusters: [{{name: lab, cluster: {{server: 'http://127.0.0.1:{api.port}'}}}}]\n"
        f"users: [{{name: lab, user: {{token: {token}}}}}]\n"
        "contexts: [{name: lab, context: {cluster: lab, user: lab}}]\n")
    return path
