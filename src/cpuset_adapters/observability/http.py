"""The plugin's HTTP endpoint: ``/metrics``, ``/healthz`` and ``/readyz``, 404 for anything
else.

It runs on its own daemon thread (stdlib ``http.server``), never on the event loop: ``/healthz``
exists to report a stuck event loop, so it must answer when that loop does not.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cpuset_adapters.listen_address import parse_listen as parse_address

_log = logging.getLogger("nri_cpuset.http")

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Probe:
    """A probe's answer: ``ok`` (200, else 503) and a one-line explanation."""

    ok: bool
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoints:
    """What the server serves; each callable runs on the HTTP thread."""

    metrics: Callable[[], bytes]
    health: Callable[[], Probe]
    ready: Callable[[], Probe]


def parse_listen(listen: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:9477`` for IPv6, ``:9477`` for every interface, port 0 for one
    the kernel picks) as (host, port); raises ``ValueError``. The same rules as the
    configuration check, so every address it accepts is served."""
    return parse_address(listen, any_port=True)


class ProbeServer:
    """``/metrics``, ``/healthz`` and ``/readyz`` on ``host:port``, served from a thread."""

    def __init__(self, listen: str, endpoints: Endpoints) -> None:
        """Binds at once: raises ``ValueError`` for a bad address, ``OSError`` when the
        address cannot be bound."""
        host, port = parse_listen(listen)
        handler = type("_Handler", (_Handler,), {"endpoints": endpoints})
        if not host:
            # Every interface, IPv6 and IPv4 alike where the kernel has IPv6 (a pod on an
            # IPv6-only cluster is probed on its IPv6 address).
            host = "::" if socket.has_ipv6 else "0.0.0.0"  # noqa: S104 - asked for
        server_class = type("_Server", (_DualStackServer,),
                            {"address_family": _family(host)})
        self._server = server_class((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="probe-server", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        """The bound host and port (the real port when 0 was asked)."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()
        _log.info("serving /metrics, /healthz and /readyz on %s:%d", *self.address)

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


class _DualStackServer(ThreadingHTTPServer):
    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6 and self.server_address[0] == "::":
            # "::" also takes IPv4 connections unless the system defaults to v6-only.
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _Handler(BaseHTTPRequestHandler):
    endpoints: Endpoints

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, self.endpoints.metrics(), METRICS_CONTENT_TYPE)
        elif path in {"/healthz", "/readyz"}:
            probe = (self.endpoints.health if path == "/healthz" else self.endpoints.ready)()
            self._send(200 if probe.ok else 503, f"{probe.detail}\n".encode(),
                       "text/plain; charset=utf-8")
        else:
            self._send(404, b"not found\n", "text/plain; charset=utf-8")

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        # Scrapes every few seconds would drown the decisions: keep them at debug.
        _log.debug("%s %s", self.address_string(), format % args)
