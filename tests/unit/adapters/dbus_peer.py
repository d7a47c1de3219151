"""A fake system bus with systemd behind it, on a unix socket, for the plugin's D-Bus client:
it authenticates (EXTERNAL), answers Hello and systemd's ``Version``, and answers
``SetUnitProperties`` calls as a test scripts it, recording what it received. Messages are
parsed and built with jeepney, which the client only uses for replies: the calls the client
marshals itself are read by an implementation that is not its own."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jeepney import DBusAddress, MessageType, Parser
from jeepney.wrappers import new_error, new_method_return, new_signal

Answer = Callable[[Any], tuple[str, str] | None]
"""A SetUnitProperties call -> ``None`` (success) or ``(error name, message)``."""


@dataclass
class FakeSystemdBus:
    path: Path
    version: str = "252.39-1~deb12u2"
    answer: Answer = lambda _call: None
    hold_until: int = 0
    """Answer no call before this many have arrived (proves the client pipelines)."""
    silent: bool = False
    """Never answer SetUnitProperties (a stuck systemd)."""
    reloading: bool = False
    """Never answer systemd's ``Version`` (systemd busy in a daemon-reload, the bus not)."""
    noise: int = 0
    """Signals sent after every message received, as systemd sends every unit change to
    every connection on its private socket (a reload sends a flood)."""
    flood: float = 0.0
    """Seconds of signals without a pause after the first SetUnitProperties call (a reload
    that goes on), or until the connection goes."""
    held_first: int = 0
    """Sessions whose first message is read only when more bytes come after it, as sd-bus
    (systemd 252, the VM lab's) sometimes does as a server (``NUDGE_EVERY``)."""
    calls: list[Any] = field(default_factory=list)
    pings: int = 0
    sessions: int = 0
    """Connections accepted."""
    hellos: int = 0
    max_in_flight: int = 0
    _server: socket.socket | None = None
    _thread: threading.Thread | None = None
    _conn: socket.socket | None = None

    def start(self) -> FakeSystemdBus:
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(4)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        for sock in (self._conn, self._server):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def drop_connection(self) -> None:
        """The bus goes away under the client (dbus restarted)."""
        if self._conn is not None:
            self._conn.shutdown(socket.SHUT_RDWR)

    def _serve(self) -> None:
        assert self._server is not None
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._conn = conn
            self.sessions += 1
            try:
                self._session(conn)
            except OSError:
                pass
            finally:
                conn.close()

    def _session(self, conn: socket.socket) -> None:
        buffered = b""
        while b"BEGIN\r\n" not in buffered:
            data = conn.recv(4096)
            if not data:
                return
            buffered += data
            # One NUL byte, then ASCII lines (the D-Bus specification; dbus-daemon answers
            # anything else with an error, as here).
            lines = buffered.split(b"BEGIN\r\n", 1)[0]  # messages may follow BEGIN at once
            if not lines.startswith(b"\0") or not lines[1:].isascii() or b"\0" in lines[1:]:
                conn.sendall(b'ERROR "Command contained non-ASCII"\r\n')
                return
            if b"AUTH EXTERNAL" in data:
                conn.sendall(b"OK " + b"0" * 32 + b"\r\n")
        parser = Parser()
        parser.add_data(self._first_bytes(conn, buffered.split(b"BEGIN\r\n", 1)[1]))
        held: list[Any] = []
        serial = 1000
        while True:
            while (message := parser.get_next_message()) is not None:
                if self.noise:  # at once, as fast as systemd sends them
                    conn.sendall(_UNIT_NEW.serialise(serial=1) * self.noise)
                serial += 1
                reply = self._reply(message, held)
                if self.flood and self.calls:
                    _flood(conn, self.flood)
                    self.flood = 0.0
                if reply is not None:
                    conn.sendall(reply.serialise(serial=serial))
                for waiting in self._release(held):
                    serial += 1
                    conn.sendall(waiting.serialise(serial=serial))
            data = conn.recv(65536)
            if not data:
                return
            parser.add_data(data)

    def _first_bytes(self, conn: socket.socket, after_begin: bytes) -> bytes:
        """What came after ``BEGIN``; in a ``held_first`` session, not before a whole first
        message and more bytes after it have come."""
        if self.held_first <= 0:
            return after_begin
        self.held_first -= 1
        while not _whole_message(after_begin):
            after_begin += conn.recv(65536)
        return after_begin + conn.recv(65536)  # held until more bytes come

    def _reply(self, message: Any, held: list[Any]) -> Any:
        member = message.header.fields.get(3)
        if member == "Hello":
            self.hellos += 1
            return new_method_return(message, "s", (":1.42",))
        if member == "Ping":
            self.pings += 1
            return None  # sent with NO_REPLY_EXPECTED
        if member == "Get":
            if self.reloading:
                return None
            return new_method_return(message, "v", (("s", self.version),))
        self.calls.append(message)
        if not self.silent:
            held.append(message)
            self.max_in_flight = max(self.max_in_flight, len(held))
        return None

    def _release(self, held: list[Any]) -> list[Any]:
        if len(self.calls) < self.hold_until and len(held) < 64:
            return []
        replies = []
        for call in held:
            error = self.answer(call)
            replies.append(new_method_return(call) if error is None
                           else new_error(call, error[0], "s", (error[1],)))
        held.clear()
        return replies


_UNIT_NEW = new_signal(DBusAddress("/org/freedesktop/systemd1",
                                  interface="org.freedesktop.systemd1.Manager"),
                       "UnitNew", "so", ("cri-containerd-x.scope",
                                         "/org/freedesktop/systemd1/unit/x"))


def _whole_message(data: bytes) -> bool:
    if len(data) < 16:
        return False
    body, fields = struct.unpack_from("<I4xI", data, 4)
    return len(data) >= 16 + fields + (-fields % 8) + body


def unit_of(call: Any) -> str:
    """The unit a recorded SetUnitProperties call names."""
    assert call.header.message_type == MessageType.method_call
    return str(call.body[0])


def _flood(conn: socket.socket, seconds: float) -> None:
    """Send signals to ``conn`` for ``seconds`` (blocked while its reader does not read)."""
    signals = _UNIT_NEW.serialise(serial=1) * 100
    until = time.monotonic() + seconds
    with contextlib.suppress(OSError):  # the connection went first
        while time.monotonic() < until:
            conn.sendall(signals)
