"""A scripted HTTP/2 server on a unix socket, for the CRI transports' wire tests: each request
is read whole, then a test's ``Script`` answers it frame by frame (trailers-only, RST_STREAM,
GOAWAY, a PING first, a body larger than the client's window...), until the client leaves.
Built on h2's server side; what a real gRPC server cannot be made to do is done here."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions

STREAM = 1


@dataclass
class Seen:
    """What the server saw of the calls, across connections."""

    headers: list[dict[str, str]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    settings_acked: int = 0
    pings_answered: int = 0
    window_updates: int = 0
    connections: int = 0

    def eventually(self, check: Callable[[Seen], bool], timeout: float = 5.0) -> bool:
        """Whether ``check`` holds within ``timeout``: what the client sends after its answer
        (an acknowledgement) reaches the server's thread when it gets to it, on a loaded
        machine after the call has returned."""
        end = time.monotonic() + timeout
        while not check(self):
            if time.monotonic() >= end:
                return False
            time.sleep(0.01)
        return True


class Exchange:
    """One connection's call, for a script to answer."""

    def __init__(self, sock: socket.socket, seen: Seen) -> None:
        self.sock = sock
        self.seen = seen
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.ended = False
        self.stream = 0

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self) -> bool:
        """Read once and handle what came; False when the client closed the connection."""
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            raise  # linger's poll: not a closed connection
        except OSError:
            return False
        if not data:
            return False
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            return False
        for event in events:
            self._note(event)
        self.flush()
        return True

    def _note(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self.stream = event.stream_id
            self.seen.headers.append(dict(event.headers or ()))  # type: ignore[arg-type]
            self.seen.bodies.append(b"")
        elif isinstance(event, h2.events.DataReceived):
            self.seen.bodies[-1] += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self.ended = True
        elif isinstance(event, h2.events.SettingsAcknowledged):
            self.seen.settings_acked += 1
        elif isinstance(event, h2.events.PingAckReceived):
            self.seen.pings_answered += 1
        elif isinstance(event, h2.events.WindowUpdated) and event.stream_id in (0, self.stream):
            self.seen.window_updates += 1

    def read_request(self) -> None:
        """Waits for the connection's next whole request."""
        self.ended = False
        while not self.ended:
            if not self.pump():
                raise ConnectionError("the client left before a request ended")

    # -- what scripts send --

    def headers(self, *extra: tuple[str, str], end: bool = False, status: str = "200") -> None:
        self.conn.send_headers(self.stream, [(":status", status),
                                             ("content-type", "application/grpc"), *extra],
                               end_stream=end)
        self.flush()

    def data(self, payload: bytes) -> None:
        """Sends ``payload`` as flow control allows, waiting for WINDOW_UPDATEs."""
        while payload:
            room = min(self.conn.local_flow_control_window(self.stream),
                       self.conn.max_outbound_frame_size)
            if room == 0:
                if not self.pump():
                    return
                continue
            self.conn.send_data(self.stream, payload[:room])
            payload = payload[room:]
            self.flush()

    def trailers(self, status: int, message: str = "") -> None:
        extra = [("grpc-message", message)] if message else []
        self.conn.send_headers(self.stream, [("grpc-status", str(status)), *extra],
                               end_stream=True)
        self.flush()

    def ping_and_wait(self) -> None:
        answered = self.seen.pings_answered
        self.conn.ping(b"12345678")
        self.flush()
        while self.seen.pings_answered == answered and self.pump():
            pass

    def linger(self, seconds: float) -> None:
        """Keep the connection open, answering what the client sends, for ``seconds``."""
        end = time.monotonic() + seconds
        self.sock.settimeout(0.05)
        while time.monotonic() < end:
            with contextlib.suppress(TimeoutError):
                if not self.pump():
                    return
        self.sock.settimeout(None)


Script = Callable[[Exchange], None]


def grpc_message(payload: bytes, *, flag: int = 0) -> bytes:
    return bytes([flag]) + len(payload).to_bytes(4, "big") + payload


@contextlib.contextmanager
def scripted_server(path: Path, script: Script) -> Iterator[Seen]:
    """Serves ``script`` on every connection to ``path`` until the block ends."""
    seen = Seen()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    listener.settimeout(0.05)
    stop = threading.Event()

    def serve(sock: socket.socket) -> None:
        with sock:
            exchange = Exchange(sock, seen)
            exchange.conn.initiate_connection()
            with contextlib.suppress(ConnectionError, OSError, h2.exceptions.H2Error):
                exchange.flush()
                while True:  # every request the client sends on this connection
                    exchange.read_request()
                    script(exchange)

    def accept() -> None:
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            seen.connections += 1
            sock.settimeout(None)
            threading.Thread(target=serve, args=(sock,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()
        listener.close()
