"""The CRI transports on the wire, against a scripted HTTP/2 server (``h2_server``): the frames
a real gRPC server cannot be made to send on demand (trailers-only answers, RST_STREAM, GOAWAY,
a PING before the answer, a compressed message, silence), the request the h2 transport sends,
and its flow control. Where both transports can be held to the same answer, both are."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from cpuset_adapters.cri.grpc_transport import GrpcTransport
from cpuset_adapters.cri.grpc_wire import decode_message, grpc_timeout
from cpuset_adapters.cri.h2_unary import H2UnaryTransport
from cpuset_adapters.cri.transport import CriError, UnaryTransport
from tests.unit.adapters.h2_server import Exchange, grpc_message, scripted_server

PATH = "/runtime.v1.RuntimeService/Version"
HANG_GUARD = 30.0
"""Seconds a wait for the fake server's thread lasts before the test calls it stuck."""
BOTH: dict[str, Callable[[str], UnaryTransport]] = {"grpcio": GrpcTransport,
                                                   "h2": H2UnaryTransport}
both = pytest.mark.parametrize("make", list(BOTH.values()), ids=list(BOTH))


def call(make: Callable[[str], UnaryTransport], sock: Path, *, timeout: float = 5.0,
         request: bytes = b"\x0a\x02v1") -> bytes:
    transport = make(str(sock))
    try:
        return transport.unary(PATH, request, timeout)
    finally:
        transport.close()


def failure(make: Callable[[str], UnaryTransport], sock: Path, *,
            timeout: float = 5.0) -> CriError:
    with pytest.raises(CriError) as caught:
        call(make, sock, timeout=timeout)
    assert caught.value.method == "Version"
    return caught.value


def answer(payload: bytes) -> Callable[[Exchange], None]:
    def script(ex: Exchange) -> None:
        ex.headers()
        ex.data(grpc_message(payload))
        ex.trailers(0)
    return script


@both
def test_a_trailers_only_error_carries_the_status_and_the_decoded_message(
        tmp_path: Path, make: Callable[[str], UnaryTransport]) -> None:
    sock = tmp_path / "cri.sock"

    def script(ex: Exchange) -> None:
        ex.headers(("grpc-status", "5"), ("grpc-message", "no %C2%ABctr%C2%BB: 100%25 gone"),
                   end=True)

    with scripted_server(sock, script):
        err = failure(make, sock)
    assert (err.code_name, err.details) == ("NOT_FOUND", "no «ctr»: 100% gone")


@both
def test_the_answer_waits_for_the_clients_ping_reply(
        tmp_path: Path, make: Callable[[str], UnaryTransport]) -> None:
    sock = tmp_path / "cri.sock"

    def script(ex: Exchange) -> None:
        ex.ping_and_wait()
        answer(b"pong")(ex)

    with scripted_server(sock, script) as seen:
        assert call(make, sock) == b"pong"
    assert seen.pings_answered >= 1


@both
@pytest.mark.parametrize(("code", "status"), [(0x7, "UNAVAILABLE"), (0x8, "CANCELLED"),
                                              (0xB, "RESOURCE_EXHAUSTED")])
def test_a_reset_stream_ends_the_call_with_grpcs_status_for_its_code(
        tmp_path: Path, make: Callable[[str], UnaryTransport], code: int, status: str) -> None:
    sock = tmp_path / "cri.sock"

    def script(ex: Exchange) -> None:
        ex.conn.reset_stream(ex.stream, code)
        ex.flush()

    with scripted_server(sock, script):
        assert failure(make, sock, timeout=2.0).code_name == status


@both
def test_a_compressed_message_is_refused(tmp_path: Path,
                                         make: Callable[[str], UnaryTransport]) -> None:
    sock = tmp_path / "cri.sock"

    def script(ex: Exchange) -> None:
        ex.headers()
        ex.data(grpc_message(b"zz", flag=1))
        ex.trailers(0)

    with scripted_server(sock, script):
        assert failure(make, sock).code_name == "INTERNAL"


@both
def test_a_silent_runtime_is_deadline_exceeded(
        tmp_path: Path, make: Callable[[str], UnaryTransport]) -> None:
    """The server never answers (nor closes): the code alone shows the client gave up at its
    deadline; how soon after it is no verdict on a loaded machine."""
    sock = tmp_path / "cri.sock"
    with scripted_server(sock, lambda ex: ex.linger(5.0)):
        assert failure(make, sock, timeout=0.3).code_name == "DEADLINE_EXCEEDED"


@both
def test_an_http_error_without_grpc_status_is_mapped(
        tmp_path: Path, make: Callable[[str], UnaryTransport]) -> None:
    sock = tmp_path / "cri.sock"
    with scripted_server(sock, lambda ex: ex.headers(status="404", end=True)):
        assert failure(make, sock).code_name == "UNIMPLEMENTED"


def test_goaway_before_the_answer_is_unavailable(tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"

    def script(ex: Exchange) -> None:
        ex.conn.close_connection(last_stream_id=0)
        ex.flush()

    with scripted_server(sock, script):
        err = failure(H2UnaryTransport, sock)
    assert err.code_name == "UNAVAILABLE"
    assert "GOAWAY" in err.details


def test_a_connection_closed_mid_answer_is_unavailable(tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"

    def script(ex: Exchange) -> None:
        ex.headers()
        ex.data(grpc_message(b"x" * 100)[:50])
        ex.sock.close()

    with scripted_server(sock, script):
        assert failure(H2UnaryTransport, sock).code_name == "UNAVAILABLE"


def test_the_h2_request_is_a_grpc_call_with_its_deadline(tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"
    with scripted_server(sock, answer(b"ok")) as seen:
        assert call(H2UnaryTransport, sock, timeout=2.5, request=b"\x0a\x02v1") == b"ok"
        # the server's SETTINGS were acknowledged (sent before the call returned)
        assert seen.eventually(lambda s: s.settings_acked >= 1)
    (headers,) = seen.headers
    assert {k: headers[k] for k in (":method", ":scheme", ":path", "content-type", "te",
                                    "grpc-timeout")} == {
        ":method": "POST", ":scheme": "http", ":path": PATH, "content-type": "application/grpc",
        "te": "trailers", "grpc-timeout": "2500m"}
    assert seen.bodies == [b"\x00\x00\x00\x00\x04\x0a\x02v1"]
    assert seen.connections == 1


def test_a_body_larger_than_the_default_window_needs_no_window_update(tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"
    payload = bytes(range(256)) * 1200  # 300 KiB
    with scripted_server(sock, answer(payload)) as seen:
        assert call(H2UnaryTransport, sock) == payload
    assert seen.window_updates == 1  # only the connection window, raised once with the preface


def test_a_small_window_is_reopened_as_data_is_consumed(tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"
    payload = bytes(range(256)) * 1200
    with scripted_server(sock, answer(payload)) as seen:
        transport = H2UnaryTransport(str(sock), window=65_535)
        assert transport.unary(PATH, b"", 5.0) == payload
    assert seen.window_updates > 4


def test_one_connection_carries_the_calls_that_follow_even_after_a_runtime_error(
        tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"
    answers = iter([b"one", None, b"three"])

    def script(ex: Exchange) -> None:
        payload = next(answers)
        if payload is None:
            ex.headers(("grpc-status", "5"), end=True)
        else:
            answer(payload)(ex)

    with scripted_server(sock, script) as seen:
        transport = H2UnaryTransport(str(sock))
        assert transport.unary(PATH, b"", 5.0) == b"one"
        with pytest.raises(CriError, match="NOT_FOUND"):
            transport.unary(PATH, b"", 5.0)
        assert transport.unary(PATH, b"", 5.0) == b"three"
        transport.close()
    assert (seen.connections, len(seen.headers)) == (1, 3)


@pytest.mark.parametrize("leave", ["close", "goaway"])
def test_a_kept_connection_the_runtime_left_is_replaced_before_the_next_call(
        tmp_path: Path, leave: str) -> None:
    sock = tmp_path / "cri.sock"

    def script(ex: Exchange) -> None:
        answer(b"ok")(ex)
        if leave == "goaway":  # a graceful stop
            ex.conn.close_connection()
            ex.flush()
        ex.sock.shutdown(socket.SHUT_WR)  # a restart: the runtime's end is gone
        left.set()

    left = threading.Event()
    with scripted_server(sock, script) as seen:
        transport = H2UnaryTransport(str(sock))
        assert transport.unary(PATH, b"", 5.0) == b"ok"
        assert left.wait(HANG_GUARD)  # the close is in the client's socket (a unix socket's)
        assert transport.unary(PATH, b"", 5.0) == b"ok"
        transport.close()
    assert seen.connections == 2


def test_a_ping_that_arrived_while_idle_is_answered_and_the_connection_kept(
        tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"

    def script(ex: Exchange) -> None:
        answer(b"ok")(ex)
        ex.conn.ping(b"idle-png")
        ex.flush()
        pinged.set()

    pinged = threading.Event()
    with scripted_server(sock, script) as seen:
        transport = H2UnaryTransport(str(sock))
        assert transport.unary(PATH, b"", 5.0) == b"ok"
        assert pinged.wait(HANG_GUARD)  # the PING is waiting in the client's socket
        assert transport.unary(PATH, b"", 5.0) == b"ok"
        transport.close()
        assert seen.eventually(lambda s: s.pings_answered >= 1)
    assert seen.connections == 1


def test_a_connection_that_failed_a_call_is_not_reused(tmp_path: Path) -> None:
    sock = tmp_path / "cri.sock"
    resets = iter([True, False])

    def script(ex: Exchange) -> None:
        if next(resets):
            ex.conn.reset_stream(ex.stream, 0x8)
            ex.flush()
        else:
            answer(b"ok")(ex)

    with scripted_server(sock, script) as seen:
        transport = H2UnaryTransport(str(sock))
        with pytest.raises(CriError, match="CANCELLED"):
            transport.unary(PATH, b"", 5.0)
        assert transport.unary(PATH, b"", 5.0) == b"ok"
        transport.close()
    assert seen.connections == 2


@pytest.mark.parametrize(("raw", "text"), [
    (b"plain", "plain"), (b"100%25 %E2%9C%93", "100% ✓"), (b"a+b%0Ac", "a+b\nc"),
    (b"bad %FF byte", "bad \ufffd byte"),
])
def test_grpc_message_is_percent_decoded_utf8(raw: bytes, text: str) -> None:
    assert decode_message(raw) == text


@pytest.mark.parametrize(("seconds", "header"), [
    (5.0, "5000m"), (0.0001, "1m"), (0.0, "1m"), (2.0004, "2001m"), (10**6, "1000000S")])
def test_grpc_timeout_has_at_most_eight_digits(seconds: float, header: str) -> None:
    assert grpc_timeout(seconds) == header
