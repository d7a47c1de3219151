"""systemd's manager over the system bus: units' ``AllowedCPUs``/``AllowedMemoryNodes`` set as
runtime properties, many calls in flight at once (decision 37).

jeepney (pure Python, no dependencies) does the authentication and parses replies; the call
sent in bulk is marshalled by :mod:`cpuset_adapters.systemd.call`. Calls are pipelined: up to
:data:`WINDOW` are sent before the first reply is read, below dbus-daemon's default
``max_replies_per_connection`` (128), past which the bus refuses calls. A reply that does not
come in time is awaited no longer; it is dropped when it comes, and counts against the window
meanwhile, so a stuck systemd costs one wait, not one per call. Nothing blocks once connected:
writes a busy systemd has not taken wait in order in a buffer, and signals (on systemd's
private socket every unit change goes to every connection) are skipped unparsed
(:mod:`cpuset_adapters.systemd.frames` frames what is read).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from cpuset_adapters.systemd.call import UnitCpuset, ping, set_properties_call, version_query
from cpuset_adapters.systemd.connection import (
    PRIVATE,
    Bound,
    BusError,
    open_authenticated,
    system_bus_path,
)
from cpuset_adapters.systemd.frames import ERROR, ERROR_NAME, REPLY_SERIAL, Message, next_reply

__all__ = ["NUDGE_EVERY", "PRIVATE", "UNSENT", "WINDOW", "BusError", "SystemdBus",
           "system_bus_path"]

MIN_VERSION: Final = 244
"""The first systemd with ``AllowedCPUs``/``AllowedMemoryNodes`` (as runc checks)."""
WINDOW: Final = 64
"""Calls awaiting a reply at once, stale ones included."""
UNSENT: Final = "unsent"
"""The problem of a call that never went out: systemd owes a window of replies (busy)."""
NUDGE_EVERY: Final = 0.5
"""Seconds a connection's first calls on systemd's private socket wait before a ``Ping`` is
sent beside them. The VM lab's systemd 252 (Debian 12) left about one new private connection
in a hundred unanswered for good, PID 1 idle and answering ``systemctl`` meanwhile: sd-bus, as
a server, can take the ``BEGIN`` line and the first call in one read and then wait for more
bytes before it reads that call (systemd pull request 24875 fixed one such case). More bytes
wake it; a Ping asks for no reply, so nothing else changes."""


class SystemdBus:
    """One connection to the system bus, used from one thread (the event loop's). jeepney is
    imported at the first connection: a node without systemd scopes never loads it."""

    def __init__(self, path: str | None = None, *, timeout: float = 1.0,
                 private: str | None = PRIVATE) -> None:
        self.path = path if path is not None else system_bus_path()
        self.private = private
        """Tried when the bus cannot be connected to (``None``: never)."""
        self.via = ""
        """The socket the connection is on."""
        self.timeout = timeout
        """Seconds a connection's set-up may take when :meth:`connect` is given none."""
        self.version = ""
        self._sock: socket.socket | None = None
        self._parser: Any = None
        self._buffer = bytearray()
        """Bytes read and not yet framed into messages."""
        self._out = bytearray()
        """Calls marshalled and not yet taken by the socket."""
        self._poll = select.poll()
        self._serial = 0
        self._stale: set[int] = set()
        """Calls sent and given up on: their replies are dropped when they come."""
        self.nudges = 0
        """Pings sent to wake systemd on a new private connection (:data:`NUDGE_EVERY`)."""

    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def _direct(self) -> bool:
        """Connected to systemd itself (its private socket), not through a bus daemon."""
        return self.via != self.path

    def connect(self, wait: float | None = None) -> str:
        """Connect (the system bus, else systemd's private socket, as runc's driver does as
        root), authenticate and check systemd's version, all within ``wait`` seconds (default
        :attr:`timeout`); return the version. Raises :class:`BusError` (``busy``: no answer
        in time, ``no-bus``: nothing to talk to, ``old-systemd``)."""
        from jeepney.bus_messages import message_bus  # noqa: PLC0415

        bound = Bound.starting_now(self.timeout if wait is None else wait)
        self.close()
        try:
            self._open(self.path, bound)
            self._call(message_bus.Hello(), bound)
        except BusError as exc:
            # Only a bus that is not there sends us to systemd's own socket: a busy one is
            # there, and trying the other socket would cost the step a second wait.
            if exc.reason != "no-bus" or self.private is None or not os.path.exists(self.private):
                raise
            self._open(self.private, bound)  # peer to peer: no Hello
        variant = self._call(version_query(), bound).body[0]
        self.version = str(variant[1]) if isinstance(variant, tuple) else str(variant)
        major = int("".join(c for c in self.version.split(".")[0] if c.isdigit()) or 0)
        if major < MIN_VERSION:
            self.close()
            raise BusError("old-systemd", f"systemd {self.version} has no AllowedCPUs "
                                          f"(since {MIN_VERSION})")
        assert self._sock is not None
        # From here on nothing blocks: a systemd too busy to read its socket must not stall
        # a hook. What it has not taken yet waits in ``_out`` (in order) for the next poll.
        self._sock.settimeout(0.0)  # non-blocking
        return self.version

    def _open(self, path: str, bound: Bound) -> None:
        sock = open_authenticated(path, bound)
        from jeepney import Parser  # noqa: PLC0415

        self._sock, self._parser, self._stale, self.via = sock, Parser(), set(), path
        self._buffer, self._out = bytearray(), bytearray()
        self._poll = select.poll()
        self._poll.register(sock, select.POLLIN)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def set_cpusets(self, requests: Sequence[UnitCpuset], wait: float) -> dict[str, str]:
        """Set every request's unit properties; return ``unit -> problem`` for those that
        were not set: a D-Bus error name and message, ``timeout`` when no reply came within
        ``wait`` seconds (the call stays queued in systemd), or :data:`UNSENT` when the call
        never went out (the window full of calls systemd has not answered). Not connected
        (never, closed while idle on systemd's private socket, or after a failure), it
        connects first, within ``wait`` too. Raises :class:`BusError` when it cannot connect
        or the connection fails (it is closed then)."""
        if self._sock is None:
            self.connect(wait)
        problems: dict[str, str] = {}
        waiting: dict[int, str] = {}
        queue = list(requests)
        deadline = time.monotonic() + wait
        try:
            while (self._stale and time.monotonic() < deadline
                   and self._read_replies(waiting, problems, 0.0)):
                pass  # late replies that have come meanwhile
            if self._stale:
                # Replies still owed from an earlier call: systemd lags (stuck in a reload,
                # say). What fits in the window is sent, and nothing awaited.
                deadline = 0.0
            while queue or waiting:
                room = WINDOW - len(waiting) - len(self._stale)
                if queue and room > 0:
                    batch, queue = queue[:room], queue[room:]
                    self._send_calls(batch, waiting)
                elif not self._read_replies(waiting, problems, deadline):
                    break  # the rest is a timeout
        except OSError as exc:
            self.close()
            raise BusError("no-bus", f"{self.via.lstrip(chr(0))}: {exc}") from exc
        for unit in waiting.values():
            problems[unit] = "timeout"
        for request in queue:
            problems[request.unit] = UNSENT
        self._stale.update(waiting)
        if self._direct and not self._stale and not self._out:
            # systemd sends every unit change to every connection on its private socket: an
            # idle one would pile them up in PID 1 until read. Connected again when needed.
            self.close()
        return problems

    def _send_calls(self, batch: Sequence[UnitCpuset], waiting: dict[int, str]) -> None:
        assert self._sock is not None
        data = bytearray()
        for request in batch:
            self._serial += 1
            waiting[self._serial] = request.unit
            data += set_properties_call(self._serial, request)
        self._out += data
        self._flush()

    def _flush(self) -> None:
        """Write what the socket takes now of the calls not yet sent."""
        assert self._sock is not None
        if self._out:
            with contextlib.suppress(BlockingIOError):
                del self._out[:self._sock.send(self._out)]

    def _read_replies(self, waiting: dict[int, str], problems: dict[str, str],
                      deadline: float) -> bool:
        """Read one reply; ``False`` when none came before ``deadline`` (monotonic; 0: only
        what has come already)."""
        message = self._next(deadline)
        if message is None:
            return False
        serial = message.header.fields.get(REPLY_SERIAL)
        self._stale.discard(serial)
        unit = waiting.pop(serial, None)
        if unit is not None and message.header.message_type.value == ERROR:
            name = message.header.fields.get(ERROR_NAME, "")
            text = message.body[0] if message.body else ""
            problems[unit] = f"{name}: {text}"
        return True

    def _call(self, message: object, bound: Bound) -> _Reply:
        """One call, answered within the bound (connection set-up): else ``busy``. On
        systemd's private socket the call is nudged while unanswered (:data:`NUDGE_EVERY`)."""
        assert self._sock is not None
        self._serial += 1
        serial = self._serial
        where = self.via.lstrip("\0")
        nudging = self._direct
        try:
            self._sock.settimeout(bound.left())
            self._sock.sendall(message.serialise(serial=serial))  # type: ignore[attr-defined]
            while True:
                wake = min(bound.until, time.monotonic() + NUDGE_EVERY) if nudging else bound.until
                reply = self._next(wake)
                if reply is None:
                    if time.monotonic() >= bound.until:
                        break
                    self._nudge(bound)
                    continue
                if reply.header.fields.get(REPLY_SERIAL) != serial:
                    continue  # a signal (NameAcquired)
                if reply.header.message_type.value == ERROR:
                    raise BusError("no-bus", f"{reply.header.fields.get(ERROR_NAME)}: "
                                             f"{reply.body[0] if reply.body else ''}")
                return _Reply(reply.body)
        except TimeoutError as exc:  # the call not taken: a full socket nobody reads
            self.close()
            raise bound.busy(where) from exc
        except OSError as exc:
            self.close()
            raise BusError("no-bus", f"{where}: {exc}") from exc
        # Connected and not answered: systemd is there, busy (a daemon-reload, say). The
        # connection goes: its reply would come in the middle of a later exchange.
        self.close()
        raise bound.busy(where)

    def _nudge(self, bound: Bound) -> None:
        """A ``Peer.Ping`` asking for no reply: new bytes on a connection whose first call
        systemd holds unread (see :data:`NUDGE_EVERY`)."""
        assert self._sock is not None
        self._serial += 1
        self.nudges += 1
        self._sock.settimeout(bound.left())
        self._sock.sendall(ping().serialise(serial=self._serial))  # type: ignore[attr-defined]

    def _next(self, deadline: float) -> Message | None:
        """The next reply (method return or error) before ``deadline``; other messages are
        skipped unparsed: on systemd's private socket every unit change is a signal sent to
        every connection, and a reload sends a flood of them. Past the deadline only what
        has come already is read, a few chunks at most."""
        assert self._sock is not None
        late_reads = 4
        while (message := self._framed()) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                late_reads -= 1
            self._poll.modify(self._sock, select.POLLIN | (select.POLLOUT if self._out else 0))
            events = 0 if late_reads < 0 else sum(e for _, e in self._poll.poll(
                max(0.0, left) * 1000))
            if events & select.POLLOUT:
                self._flush()
            if not events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                if events:
                    continue  # only room to write
                return None
            try:
                data = self._sock.recv(65536)
            except BlockingIOError:
                continue
            if not data:
                raise ConnectionResetError("the bus closed the connection")
            self._buffer += data
        return Message(message)

    def _framed(self) -> object | None:
        """The next whole reply in the buffer, parsed (``None``: none complete yet)."""
        chunk = next_reply(self._buffer)
        if chunk is None:
            return None
        self._parser.add_data(chunk)
        return self._parsed()


    def _parsed(self) -> object | None:
        try:
            return self._parser.get_next_message()  # type: ignore[no-any-return]
        except Exception as exc:
            raise ConnectionResetError(f"a malformed message from the bus: {exc!r}") from exc


@dataclass(frozen=True, slots=True)
class _Reply:
    body: tuple[object, ...]
