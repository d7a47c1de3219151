"""The plugin's HTTP endpoint: ``/metrics``, ``/healthz`` and ``/readyz``, 404 for anything
else.

It runs on its own daemon thread, never on the event loop: ``/healthz`` exists to report a
stuck event loop, so it must answer when that loop does not. Its HTTP is the least a scraper
and a kubelet probe need (a GET, its headers read and ignored, one answer, the connection
closed), on ``socketserver``: ``http.server`` costs the daemon 1.8 MiB resident (``http.client``,
``email``, ``html``, ``mimetypes``) for nothing it uses (decision 56).
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass

from cpuset_adapters.listen_address import parse_listen as parse_address

_log = logging.getLogger("nri_cpuset.http")

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
MAX_LINE = 8192
"""Longest request or header line read (``http.server``'s bound too)."""
MAX_HEADERS = 100
READ_TIMEOUT_S = 10.0
"""How long a client that sends nothing holds its thread."""
REASON_PHRASES = {200: "OK", 400: "Bad Request", 404: "Not Found", 501: "Not Implemented",
                  503: "Service Unavailable"}


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


class _DualStackServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True  # a restart binds again at once, as http.server's did

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6 and self.server_address[0] == "::":
            # "::" also takes IPv4 connections unless the system defaults to v6-only.
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _Handler(socketserver.StreamRequestHandler):
    endpoints: Endpoints
    timeout = READ_TIMEOUT_S

    def handle(self) -> None:
        try:
            line, within_bounds = self._read_head()
        except OSError:  # a timeout or a reset: nobody to answer
            return
        request = line.decode("latin-1").rstrip("\r\n")
        parts = request.split()
        if not within_bounds or len(parts) != 3 or not parts[2].startswith("HTTP/"):
            self._send(400, b"bad request\n", TEXT, request[:80])
        elif parts[0] != "GET":
            self._send(501, b"only GET\n", TEXT, request)
        else:
            self._get(parts[1].split("?", 1)[0], request)

    def _read_head(self) -> tuple[bytes, bool]:
        """The request line, and whether it and the headers after it were within bounds and
        ended with a blank line. Read to that line even when out of bounds (up to twice
        them), so that closing leaves nothing unread: a reset would lose the answer."""
        line = self.rfile.readline(MAX_LINE + 1)
        within_bounds = len(line) <= MAX_LINE
        for count in range(2 * MAX_HEADERS):  # an over-long line comes in several pieces
            header = self.rfile.readline(MAX_LINE + 1)
            if header in {b"\r\n", b"\n"}:
                return line, within_bounds and count <= MAX_HEADERS
            if not header:
                return line, False
            within_bounds = within_bounds and len(header) <= MAX_LINE
        return line, False

    def _get(self, path: str, request: str) -> None:
        if path == "/metrics":
            self._send(200, self.endpoints.metrics(), METRICS_CONTENT_TYPE, request)
        elif path in {"/healthz", "/readyz"}:
            probe = (self.endpoints.health if path == "/healthz" else self.endpoints.ready)()
            self._send(200 if probe.ok else 503, f"{probe.detail}\n".encode(), TEXT, request)
        else:
            self._send(404, b"not found\n", TEXT, request)

    def _send(self, code: int, body: bytes, content_type: str, request: str) -> None:
        head = (f"HTTP/1.0 {code} {REASON_PHRASES[code]}\r\nServer: nri-cpuset\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n")
        try:
            self.wfile.write(head.encode("latin-1") + body)
        except OSError:  # the scraper went away
            return
        # Scrapes every few seconds would drown the decisions: keep them at debug.
        _log.debug("%s \"%s\" %d", self.client_address[0], request, code)
