"""The API client's HTTP/1.1: what it sends, the three framings of an answer's body, a kept
connection, and every answer it cannot read as an ``OSError`` (through the API client against
the fake API server: test_kube_api_client.py and test_kube_api_events.py)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from cpuset_adapters.kubernetes.http11 import MAX_FIELDS, Connection, HttpError


@dataclass
class Canned:
    """A server on localhost answering the n-th request with ``answers[n]`` (raw bytes), then
    closing the connection when ``close_after`` holds n; what it was sent is in ``requests``,
    and ``connections`` counts the connections it accepted."""

    answers: list[bytes]
    close_after: set[int] = field(default_factory=set)
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    port: int = 0


@pytest.fixture
def canned() -> Iterator[Canned]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)  # how soon the accepting thread sees the test end
    state = Canned(answers=[])
    state.port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(10)
            state.connections += 1
            # The reader holds the socket open: both close for the connection to end.
            with conn, conn.makefile("rb") as reader:
                while len(state.requests) < len(state.answers):
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = reader.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n")
                                   if h.lower().startswith(b"content-length:")), 0)
                    state.requests.append(head + reader.read(length))
                    n = len(state.requests) - 1
                    conn.sendall(state.answers[n])
                    if n in state.close_after:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield state
    stop.set()
    server.close()
    thread.join(timeout=10)


def connect(canned: Canned) -> Connection:
    return Connection("127.0.0.1", canned.port, timeout=5.0)


def test_a_request_carries_its_host_length_and_headers(canned: Canned) -> None:
    canned.answers = [b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}"]
    status, body = connect(canned).request("POST", "/apis/x", b'{"a":1}',
                                           {"Content-Type": "application/json"})
    assert (status, body) == (201, b"{}")
    head, _, sent = canned.requests[0].partition(b"\r\n\r\n")
    assert head.split(b"\r\n") == [
        b"POST /apis/x HTTP/1.1", f"Host: 127.0.0.1:{canned.port}".encode(),
        b"Content-Length: 7", b"Content-Type: application/json"]
    assert sent == b'{"a":1}'


def test_the_default_port_is_left_out_of_the_host_field() -> None:
    assert Connection("api.example", 80, timeout=1.0)._host_field == "api.example"
    assert Connection("::1", 6443, timeout=1.0)._host_field == "[::1]:6443"


def test_a_kept_alive_connection_serves_the_next_request(canned: Canned) -> None:
    canned.answers = [b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na",
                      b"HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nb"]
    connection = connect(canned)
    assert connection.request("PATCH", "/", b"", {}) == (200, b"a")
    assert connection.request("POST", "/", b"", {}) == (404, b"b")
    assert canned.connections == 1


def test_a_chunked_body_is_joined_and_its_trailers_skipped(canned: Canned) -> None:
    canned.answers = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"4;ext=1\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nX-Trailer: t\r\n\r\n",
                      b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"]
    connection = connect(canned)
    assert connection.request("GET", "/", b"", {}) == (200, b'{"a":1}')
    assert connection.request("GET", "/", b"", {}) == (200, b"")
    assert canned.connections == 1


def test_a_body_without_a_length_ends_with_the_connection(canned: Canned) -> None:
    canned.answers = [b"HTTP/1.0 200 OK\r\n\r\nall of it", b"HTTP/1.1 204 No Content\r\n\r\n"]
    canned.close_after = {0}
    connection = connect(canned)
    assert connection.request("GET", "/", b"", {}) == (200, b"all of it")
    assert connection.request("DELETE", "/", b"", {}) == (204, b"")
    assert canned.connections == 2


def test_connection_close_opens_a_new_one_for_the_next_request(canned: Canned) -> None:
    canned.answers = [b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na",
                      b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"]
    canned.close_after = {0}
    connection = connect(canned)
    assert connection.request("GET", "/", b"", {}) == (200, b"a")
    assert connection.request("GET", "/", b"", {}) == (200, b"b")
    assert canned.connections == 2


def test_an_informational_answer_is_skipped(canned: Canned) -> None:
    canned.answers = [b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
                      b"Content-Length: 2\r\n\r\nok"]
    assert connect(canned).request("POST", "/", b"x", {}) == (201, b"ok")


BAD_ANSWERS = {
    "not HTTP": (b"SSH-2.0-OpenSSH\r\n\r\n", "status line"),
    "no status code": (b"HTTP/1.1 OK\r\n\r\n", "status line"),
    "a field without a colon": (b"HTTP/1.1 200 OK\r\nbroken\r\n\r\n", "header field"),
    "too many fields": (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * (MAX_FIELDS + 1) + b"\r\n",
                        "header fields"),
    "a line too long": (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", "longer"),
    "a bad length": (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
    "a body cut short": (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "before the body"),
    "a bad chunk size": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                         "chunk size"),
    "a negative chunk size": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
                              "chunk size"),
    "a chunk longer than its size": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     b"1\r\nab\r\n0\r\n\r\n", "chunk longer"),
    "no answer": (b"", "ended before the answer"),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_an_answer_it_cannot_read_is_an_os_error(canned: Canned, case: str) -> None:
    answer, words = BAD_ANSWERS[case]
    canned.answers = [answer]
    canned.close_after = {0}
    with pytest.raises(HttpError, match=words) as raised:
        connect(canned).request("GET", "/", b"", {})
    assert isinstance(raised.value, OSError)


def test_an_answer_that_never_comes_times_out() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:
        connection = Connection("127.0.0.1", silent.getsockname()[1], timeout=0.2)
        with pytest.raises(TimeoutError):
            connection.request("GET", "/", b"", {})
        connection.close()
        connection.close()  # twice is harmless
