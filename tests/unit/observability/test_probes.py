"""/healthz, /readyz and /metrics over HTTP, served from a thread; health driven by an injected
clock (no sleeping)."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from cpuset_adapters.observability import probes
from cpuset_adapters.observability.http import Endpoints, ProbeServer, parse_listen
from cpuset_adapters.observability.metrics import PluginMetrics


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Node:
    """What the probes look at: registration, synchronization, the hooks in flight."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.metrics = PluginMetrics(clock=self.clock)
        self.registered = False
        self.synchronized = False

    def endpoints(self) -> Endpoints:
        return Endpoints(
            metrics=self.metrics.exposition,
            health=lambda: probes.health(self.metrics.stuck_hooks()),
            ready=lambda: probes.readiness(registered=self.registered,
                                           synchronized=self.synchronized))


@pytest.fixture
def served() -> Iterator[tuple[Node, str]]:
    node = Node()
    server = ProbeServer("127.0.0.1:0", node.endpoints())
    server.start()
    try:
        yield node, "http://{}:{}".format(*server.address)
    finally:
        server.close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:  # noqa: S310 - our own server
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_healthz_is_ok_while_hooks_finish_even_slowly(served: tuple[Node, str]) -> None:
    node, url = served
    assert get(f"{url}/healthz") == (200, "ok\n")
    token = node.metrics.hook_started("CreateContainer", 2000)
    node.clock.now += 4.0  # exactly twice the timeout: not yet stuck
    assert get(f"{url}/healthz")[0] == 200
    node.metrics.hook_finished(token, "ok")
    assert get(f"{url}/healthz")[0] == 200


def test_healthz_fails_when_a_hook_is_in_flight_longer_than_twice_the_request_timeout(
        served: tuple[Node, str]) -> None:
    node, url = served
    token = node.metrics.hook_started("CreateContainer", 1000)
    node.clock.now += 2.5
    status, body = get(f"{url}/healthz")
    assert status == 503
    assert "CreateContainer in flight for 2.5 s (limit 2.0 s" in body
    node.metrics.hook_finished(token, "ok")  # it came back: healthy again
    assert get(f"{url}/healthz")[0] == 200


def test_readyz_fails_until_registered_and_synchronized(served: tuple[Node, str]) -> None:
    node, url = served
    assert get(f"{url}/readyz") == (503, "not registered with the runtime\n")
    node.registered = True
    assert get(f"{url}/readyz") == (503, "registered, not synchronized yet\n")
    node.synchronized = True
    assert get(f"{url}/readyz")[0] == 200
    node.registered = False  # the runtime went away
    assert get(f"{url}/readyz")[0] == 503


def test_metrics_are_served_in_the_text_format_and_anything_else_is_404(
        served: tuple[Node, str]) -> None:
    _, url = served
    status, body = get(f"{url}/metrics")
    assert status == 200
    assert "# TYPE nri_cpuset_admissions_total counter" in body
    assert get(f"{url}/")[0] == 404
    assert get(f"{url}/metrics/extra")[0] == 404


@pytest.mark.parametrize(("listen", "parsed"), [
    ("127.0.0.1:9477", ("127.0.0.1", 9477)), ("0.0.0.0:80", ("0.0.0.0", 80)),  # noqa: S104
    ("[::1]:9477", ("::1", 9477)), ("localhost:0", ("localhost", 0)), (":9477", ("", 9477)),
])
def test_listen_addresses_parse(listen: str, parsed: tuple[str, int]) -> None:
    assert parse_listen(listen) == parsed


@pytest.mark.parametrize(("listen", "why"), [
    ("9477", "expected host:port"), ("host:", "not a number"), ("host:port", "not a number"),
    ("host:70000", "not a number"), ("::1:9477", "in brackets"),
])
def test_bad_listen_addresses_are_refused(listen: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_listen(listen)


def test_an_empty_host_serves_every_interface_ipv4_included() -> None:
    # ":PORT" is what the configuration check accepts for "every interface": it must serve.
    server = ProbeServer(":0", Node().endpoints())
    server.start()
    try:
        port = server.address[1]
        assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200
    finally:
        server.close()


def test_a_busy_address_raises_at_construction() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(OSError, match="in use"):
            ProbeServer(f"127.0.0.1:{port}", Node().endpoints())


def raw(url: str, request: bytes) -> bytes:
    """What the server answers ``request``, sent as is (and nothing after it), until it
    closes the connection."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def test_an_answer_is_http_with_its_length_and_closes_the_connection(
        served: tuple[Node, str]) -> None:
    _, url = served
    answer = raw(url, b"GET /healthz?verbose=1 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n")
    head, body = answer.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.0 200 OK"
    assert "Content-Length: 3" in lines
    assert "Connection: close" in lines
    assert body == b"ok\n"


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"POST /metrics HTTP/1.1\r\n\r\n", b"HTTP/1.0 501 "),
    (b"HEAD /metrics HTTP/1.1\r\n\r\n", b"HTTP/1.0 501 "),
    (b"GET /metrics\r\n\r\n", b"HTTP/1.0 400 "),
    (b"nonsense\r\n\r\n", b"HTTP/1.0 400 "),
    (b"GET /" + b"x" * 9000 + b" HTTP/1.1\r\n\r\n", b"HTTP/1.0 400 "),
    (b"GET /metrics HTTP/1.1\r\n" + b"X-A: b\r\n" * 101 + b"\r\n", b"HTTP/1.0 400 "),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\n", b"HTTP/1.0 400 "),  # closed mid-headers
])
def test_requests_it_does_not_serve_are_refused_by_status(
        served: tuple[Node, str], request_bytes: bytes, status: bytes) -> None:
    _, url = served
    assert raw(url, request_bytes).startswith(status)
    assert get(f"{url}/healthz")[0] == 200  # and it goes on serving


def test_a_client_that_connects_and_leaves_without_a_word_harms_nothing(
        served: tuple[Node, str]) -> None:
    _, url = served
    host, port = url.removeprefix("http://").rsplit(":", 1)
    for _ in range(3):
        socket.create_connection((host, int(port)), timeout=5).close()
    assert get(f"{url}/metrics")[0] == 200
