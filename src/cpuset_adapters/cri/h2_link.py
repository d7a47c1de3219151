"""One HTTP/2 connection (h2c, prior knowledge) to a gRPC server, carrying one unary call at a
time: the frames of a call and what ends it. ``h2_unary`` opens, reuses and discards these.

The preface's SETTINGS announce a large initial window (with a WINDOW_UPDATE raising the
connection's own), so a ListContainers answer of several hundred KB streams without waiting;
consumed data is handed back (h2 sends WINDOW_UPDATEs once half a window is used). h2
acknowledges the server's SETTINGS and answers its PINGs; this module writes those out
whenever it reads. A call's status comes from its trailers, or from the headers of a
trailers-only answer; RST_STREAM, GOAWAY, a closed connection and the deadline end it with the
status gRPC gives them.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
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
    http_status,
    reset_status,
    unframe_message,
)
from cpuset_adapters.cri.transport import CriError
from cpuset_adapters.grpc_status import StatusCode

_DEFAULT_CONNECTION_WINDOW: Final = 65_535  # RFC 9113, 6.9.2: only WINDOW_UPDATE raises it
_LAST_STREAM: Final = 2**31 - 1 - 2  # a new connection before the client's ids run out
_READ: Final = 256 * 1024


@dataclass
class _Answer:
    """What arrived for the call in flight."""

    stream: int
    headers: dict[bytes, bytes] = field(default_factory=dict)
    trailers: dict[bytes, bytes] = field(default_factory=dict)
    body: list[bytes] = field(default_factory=list)
    size: int = 0
    ended: bool = False


class H2Link:
    """A connected socket and its h2 state machine; ``call`` one unary call at a time."""

    def __init__(self, sock: socket.socket, window: int) -> None:
        self._sock = sock
        self._conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None))
        # Set before the preface: its SETTINGS frame carries them and h2 takes them as current.
        self._conn.local_settings = h2.settings.Settings(client=True, initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window,
            h2.settings.SettingCodes.ENABLE_PUSH: 0,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 2**16,
        })
        self._conn.initiate_connection()
        if window > _DEFAULT_CONNECTION_WINDOW:
            self._conn.increment_flow_control_window(window - _DEFAULT_CONNECTION_WINDOW)
        # Sent with the first call's request: the preface needs no answer before it.
        self._answer = _Answer(stream=0)
        self._method = ""
        self._deadline = 0.0
        self.broken = False

    def call(self, method: str, headers: list[tuple[str, str]], body: bytes,
             deadline: float) -> bytes:
        """Send one request and return its message; raises ``CriError``. After an error
        other than the answer's own status the link is ``broken`` and must be closed."""
        self._method, self._deadline = method, deadline
        try:
            self._answer = _Answer(stream=self._conn.get_next_available_stream_id())
            self._send(headers, body)
            while not self._answer.ended:
                self._receive()
        except BaseException:
            self.broken = True
            raise
        return self._result()  # the stream ended cleanly: the link stays usable, any status

    def reusable(self) -> bool:
        """Whether an idle link may carry another call: nothing the server sent meanwhile
        closes it (EOF after a runtime restart, a GOAWAY), and stream ids remain."""
        if self.broken or self._conn.highest_outbound_stream_id >= _LAST_STREAM:
            return False
        self._sock.settimeout(0.0)  # non-blocking: a look at what arrived meanwhile, no wait
        try:
            data = self._sock.recv(_READ)
        except BlockingIOError:
            return True  # nothing pending: the usual case
        except OSError:
            return False
        try:
            events = self._conn.receive_data(data) if data else None
            if events is None or any(isinstance(e, h2.events.ConnectionTerminated)
                                     for e in events):
                return False
            self._sock.sendall(self._conn.data_to_send())  # PING or SETTINGS acknowledgements
        except (h2.exceptions.ProtocolError, OSError):
            return False
        return True

    def close(self) -> None:
        self._sock.close()

    # -- sending --

    def _send(self, headers: list[tuple[str, str]], body: bytes) -> None:
        """HEADERS, then the body as DATA frames as flow control allows (one frame for any
        request the CRI reads send)."""
        stream = self._answer.stream
        self._conn.send_headers(stream, headers)
        while body:
            room = min(self._conn.local_flow_control_window(stream),
                       self._conn.max_outbound_frame_size)
            if room == 0:
                self._flush()
                self._receive()  # until a WINDOW_UPDATE
                if self._answer.ended:  # the server answered before taking the whole request
                    return
                continue
            chunk, body = body[:room], body[room:]
            self._conn.send_data(stream, chunk, end_stream=not body)
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
        answer = self._answer
        for event in events:
            if isinstance(event, h2.events.ConnectionTerminated):
                self.broken = True  # no new stream may use it
                if answer.ended:  # a graceful stop right after the answer
                    return
                raise self._error(StatusCode.UNAVAILABLE, f"the runtime closed the connection "
                                                          f"(GOAWAY {_name(event.error_code)})")
            if getattr(event, "stream_id", None) != answer.stream:
                continue  # connection-level events h2 has handled
            if isinstance(event, h2.events.ResponseReceived):
                answer.headers = _header_map(event.headers)
            elif isinstance(event, h2.events.TrailersReceived):
                answer.trailers = _header_map(event.headers)
            elif isinstance(event, h2.events.DataReceived):
                self._take(event.data, event.flow_controlled_length)
            elif isinstance(event, h2.events.StreamEnded):
                answer.ended = True
            elif isinstance(event, h2.events.StreamReset):
                code = reset_status(int(event.error_code),
                                    deadline_passed=time.monotonic() >= self._deadline)
                raise self._error(code, f"stream reset by the runtime "
                                        f"({_name(event.error_code)})")

    def _take(self, data: bytes, flow_controlled: int) -> None:
        self._answer.size += len(data)
        if self._answer.size > MAX_MESSAGE + 5:
            raise self._error(StatusCode.RESOURCE_EXHAUSTED,
                              f"response larger than {MAX_MESSAGE} bytes")
        self._answer.body.append(data)
        self._conn.acknowledge_received_data(flow_controlled, self._answer.stream)

    def _result(self) -> bytes:
        headers, trailers = self._answer.headers, self._answer.trailers
        raw = trailers.get(b"grpc-status", headers.get(b"grpc-status"))
        if raw is None:
            status = headers.get(b":status", b"")
            code = (http_status(int(status)) if status.isdigit() and status != b"200"
                    else StatusCode.INTERNAL)
            raise self._error(code, f"no grpc-status in the answer (HTTP status "
                                    f"{status.decode('ascii', 'replace') or 'none'})")
        if not raw.isdigit():
            raise self._error(StatusCode.INTERNAL, f"malformed grpc-status {raw!r}")
        if int(raw) != StatusCode.OK:
            message = trailers.get(b"grpc-message", headers.get(b"grpc-message"))
            raise CriError(self._method, int(raw), decode_message(message or b""))
        try:
            return unframe_message(b"".join(self._answer.body))
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


def _name(code: object) -> str:
    """An HTTP/2 error code by name (``CANCEL``), or its number when h2 does not know it."""
    name = getattr(code, "name", None)
    return name if isinstance(name, str) else str(code)
