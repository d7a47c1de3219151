"""The h2 transport: one unary gRPC call over HTTP/2 with prior knowledge (h2c) on the runtime's
unix socket, in pure Python on the ``h2`` state machine; the daemon's CRI reads use it so that
it never imports grpc (decision 34).

A call opens its own connection, sends the client preface, SETTINGS (a large initial window,
so a ListContainers answer of several hundred KB on a dense node streams without waiting on
WINDOW_UPDATEs), the request's HEADERS and its DATA (the 5-byte gRPC prefix and the message),
and reads until the stream ends: DATA reassembled, the status from the trailers (or from the
headers of a trailers-only answer). h2 acknowledges the server's SETTINGS and answers its
PINGs; this module sends them, and WINDOW_UPDATEs as data is consumed. RST_STREAM, GOAWAY, a
closed connection and the overall deadline end the call with the status gRPC gives them.

One connection per call, not one kept open: a unix-socket connect and the preface cost no
round trip (the request follows the preface without waiting for the server's SETTINGS);
nothing is left open between the daemon's rare reads, and no half-dead connection (a runtime
restarted meanwhile) can fail a later call.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable
from typing import Final

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

from cpuset_adapters.cri.grpc_wire import (
    MAX_MESSAGE,
    WireError,
    decode_message,
    frame_message,
    grpc_timeout,
    http_status,
    reset_status,
    unframe_message,
)
from cpuset_adapters.cri.status import StatusCode
from cpuset_adapters.cri.transport import CriError, method_of

#: The initial stream and connection window announced: 16 MiB, the largest message accepted.
DEFAULT_WINDOW: Final = MAX_MESSAGE
_DEFAULT_CONNECTION_WINDOW: Final = 65_535  # RFC 9113, 6.9.2: only WINDOW_UPDATE raises it
_STREAM: Final = 1  # the one stream of a connection
_READ: Final = 256 * 1024


class H2UnaryTransport:
    """A ``UnaryTransport`` to the unix socket at ``path``: one connection per call (see the
    module's docstring), so it holds nothing between calls and may be shared by threads.
    ``window`` is the initial flow-control window announced (tests make it small)."""

    def __init__(self, path: str, *, window: int = DEFAULT_WINDOW,
                 authority: str = "localhost") -> None:
        self.path = path
        self.window = window
        self.authority = authority

    def unary(self, path: str, request: bytes, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        method = method_of(path)
        sock = _connect(self.path, method, deadline)
        try:
            call = _Call(sock, method, deadline, self.window)
            call.send_request(self._headers(path, timeout), frame_message(request))
            return call.read_response()
        finally:
            sock.close()

    def close(self) -> None:
        """Nothing to release: every call closes its own connection."""

    def _headers(self, path: str, timeout: float) -> list[tuple[str, str]]:
        return [(":method", "POST"), (":scheme", "http"), (":path", path),
                (":authority", self.authority), ("te", "trailers"),
                ("content-type", "application/grpc"), ("grpc-timeout", grpc_timeout(timeout)),
                ("user-agent", "nri-cpuset-h2")]


def _connect(path: str, method: str, deadline: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.connect(path)
    except TimeoutError:
        sock.close()
        raise CriError(method, StatusCode.DEADLINE_EXCEEDED,
                       f"no connection to {path} before the deadline") from None
    except OSError as err:
        sock.close()
        raise CriError(method, StatusCode.UNAVAILABLE,
                       f"cannot connect to {path}: {err.strerror or err}") from None
    return sock


class _Call:
    """One request and its response on a fresh connection."""

    def __init__(self, sock: socket.socket, method: str, deadline: float, window: int) -> None:
        self._sock = sock
        self._method = method
        self._deadline = deadline
        self._conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None))
        # Set before the preface: the SETTINGS frame carries them and h2 takes them as current.
        self._conn.local_settings = h2.settings.Settings(client=True, initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window,
            h2.settings.SettingCodes.ENABLE_PUSH: 0,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 2**16,
        })
        self._window = window
        self._headers: dict[bytes, bytes] = {}
        self._trailers: dict[bytes, bytes] = {}
        self._body: list[bytes] = []
        self._size = 0
        self._ended = False

    # -- sending --

    def send_request(self, headers: list[tuple[str, str]], body: bytes) -> None:
        """Preface, SETTINGS, a larger connection window, HEADERS, then the body as DATA
        frames as flow control allows (one frame for any request the CRI reads send)."""
        self._conn.initiate_connection()
        if self._window > _DEFAULT_CONNECTION_WINDOW:
            self._conn.increment_flow_control_window(self._window - _DEFAULT_CONNECTION_WINDOW)
        self._conn.send_headers(_STREAM, headers)
        while body:
            room = min(self._conn.local_flow_control_window(_STREAM),
                       self._conn.max_outbound_frame_size)
            if room == 0:
                self._flush()
                self._receive()  # until a WINDOW_UPDATE
                if self._ended:  # the runtime answered before taking the whole request
                    return
                continue
            chunk, body = body[:room], body[room:]
            self._conn.send_data(_STREAM, chunk, end_stream=not body)
        self._flush()

    def _flush(self) -> None:
        data = self._conn.data_to_send()
        if not data:
            return
        self._sock.settimeout(self._remaining())
        try:
            self._sock.sendall(data)
        except TimeoutError:
            raise self._error(StatusCode.DEADLINE_EXCEEDED, "deadline passed while sending") \
                from None
        except OSError as err:
            raise self._error(StatusCode.UNAVAILABLE,
                              f"the connection failed while sending: {err}") from None

    # -- receiving --

    def read_response(self) -> bytes:
        """Read until the stream ends; return the message or raise the call's status."""
        while not self._ended:
            self._receive()
        return self._result()

    def _receive(self) -> None:
        self._sock.settimeout(self._remaining())
        try:
            data = self._sock.recv(_READ)
        except TimeoutError:
            raise self._error(StatusCode.DEADLINE_EXCEEDED, "deadline passed while waiting "
                                                            "for the runtime's answer") from None
        except OSError as err:
            raise self._error(StatusCode.UNAVAILABLE, f"the connection failed: {err}") from None
        if not data:
            raise self._error(StatusCode.UNAVAILABLE,
                              "the runtime closed the connection before the call ended")
        try:
            events = self._conn.receive_data(data)
        except h2.exceptions.ProtocolError as err:
            raise self._error(StatusCode.INTERNAL, f"HTTP/2 protocol error: {err}") from None
        self._handle(events)
        self._flush()  # SETTINGS and PING acknowledgements, WINDOW_UPDATEs

    def _handle(self, events: Iterable[h2.events.Event]) -> None:
        for event in events:
            if isinstance(event, h2.events.ResponseReceived):
                self._headers = _header_map(event.headers)
            elif isinstance(event, h2.events.TrailersReceived):
                self._trailers = _header_map(event.headers)
            elif isinstance(event, h2.events.DataReceived):
                self._take(event.data, event.flow_controlled_length)
            elif isinstance(event, h2.events.StreamEnded):
                self._ended = True
            elif isinstance(event, h2.events.StreamReset):
                code = reset_status(int(event.error_code),
                                    deadline_passed=time.monotonic() >= self._deadline)
                raise self._error(code, f"stream reset by the runtime "
                                        f"({_code_text(event.error_code)})")
            elif isinstance(event, h2.events.ConnectionTerminated):
                raise self._error(StatusCode.UNAVAILABLE,
                                  f"the runtime closed the connection (GOAWAY "
                                  f"{_code_text(event.error_code)})")

    def _take(self, data: bytes, flow_controlled: int) -> None:
        self._size += len(data)
        if self._size > MAX_MESSAGE + 5:
            raise self._error(StatusCode.RESOURCE_EXHAUSTED,
                              f"response larger than {MAX_MESSAGE} bytes")
        self._body.append(data)
        # Hands the window back; h2 sends a WINDOW_UPDATE once enough was consumed.
        self._conn.acknowledge_received_data(flow_controlled, _STREAM)

    def _result(self) -> bytes:
        raw = self._trailers.get(b"grpc-status", self._headers.get(b"grpc-status"))
        if raw is None:
            status = self._headers.get(b":status", b"")
            code = (http_status(int(status)) if status.isdigit() and status != b"200"
                    else StatusCode.INTERNAL)
            raise self._error(code, f"no grpc-status in the answer (HTTP status "
                                    f"{status.decode('ascii', 'replace') or 'none'})")
        if not raw.isdigit():
            raise self._error(StatusCode.INTERNAL, f"malformed grpc-status {raw!r}")
        if int(raw) != StatusCode.OK:
            message = self._trailers.get(b"grpc-message", self._headers.get(b"grpc-message"))
            raise CriError(self._method, int(raw), decode_message(message or b""))
        try:
            return unframe_message(b"".join(self._body))
        except WireError as err:
            raise self._error(err.code, err.message) from None

    # -- helpers --

    def _remaining(self) -> float:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise self._error(StatusCode.DEADLINE_EXCEEDED, "deadline passed")
        return remaining

    def _error(self, code: StatusCode, details: str) -> CriError:
        return CriError(self._method, code, details)


def _header_map(headers: Iterable[tuple[bytes | str, bytes | str]] | None) -> dict[bytes, bytes]:
    return {_as_bytes(name): _as_bytes(value) for name, value in headers or ()}


def _as_bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def _code_text(code: object) -> str:
    """An HTTP/2 error code by name (``CANCEL``), or its number when h2 does not know it."""
    name = getattr(code, "name", None)
    return name if isinstance(name, str) else str(code)
