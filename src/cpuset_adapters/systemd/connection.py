"""Where systemd's manager is reached and how a connection to it is opened: the system bus's
address, the socket authenticated within a time bound, and what a failure is called.

A failure has a reason the scope writer acts on. ``no-bus``: nothing to talk to (no socket,
refused, authentication rejected, an error answer, the connection lost), asked again after a
pause. ``busy``: something is there but did not answer within the bound, typically systemd
(PID 1) in a ``daemon-reload``, which on a big node takes seconds and under emulation tens of
seconds, during which it reads none of its sockets; asked again at the next step, since the
units it is not told about are the ones the reload reverts.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Final

SYSTEM_BUS: Final = "/run/dbus/system_bus_socket"
PRIVATE: Final = "/run/systemd/private"
"""systemd's own socket, root only: a direct connection (no bus daemon, no Hello), what runc's
systemd driver (go-systemd) uses as root when the system bus cannot be reached."""


class BusError(Exception):
    """The bus cannot be used: ``reason`` is ``no-bus`` (no socket, refused, gone), ``busy``
    (connected, no answer in time) or ``old-systemd``; ``detail`` says what happened."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Bound:
    """The time a connection's set-up may take: ``wait`` seconds, until ``until``
    (monotonic), shared by every step of it (socket, authentication, Hello, version)."""

    wait: float
    until: float

    @classmethod
    def starting_now(cls, wait: float) -> Bound:
        return cls(wait, time.monotonic() + wait)

    def left(self) -> float:
        """Seconds left, never 0 (a socket timeout of 0 would make it non-blocking)."""
        return max(self.until - time.monotonic(), 0.001)

    def busy(self, where: str) -> BusError:
        return BusError("busy", f"{where}: no answer within {self.wait:g} s")


def system_bus_path(environ: dict[str, str] | None = None) -> str:
    """The system bus's socket: ``DBUS_SYSTEM_BUS_ADDRESS`` (``unix:path=`` or
    ``unix:abstract=``) or the well-known path."""
    address = (environ if environ is not None else os.environ).get(
        "DBUS_SYSTEM_BUS_ADDRESS", "")
    for part in address.split(";"):
        kind, _, rest = part.partition(":")
        if kind != "unix":
            continue
        keys = dict(item.partition("=")[::2] for item in rest.split(","))
        if "path" in keys:
            return keys["path"]
        if "abstract" in keys:
            return "\0" + keys["abstract"]
    return SYSTEM_BUS


def open_authenticated(path: str, bound: Bound) -> socket.socket:
    """A blocking socket to ``path``, authenticated (EXTERNAL, jeepney's) and past ``BEGIN``.
    Raises :class:`BusError`: ``busy`` when the peer took no part in time (systemd's private
    socket is authenticated by PID 1 itself, so a reload stalls it here), ``no-bus`` else."""
    from jeepney.auth import BEGIN, Authenticator  # noqa: PLC0415

    where = path.lstrip("\0")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(bound.left())
        sock.connect(path)
        auth = Authenticator()  # its first request starts with the protocol's NUL byte
        for request in auth:
            sock.settimeout(bound.left())
            sock.sendall(request)
            auth.feed(sock.recv(1024) or b"ERROR closed\r\n")
        sock.sendall(BEGIN)
    except (TimeoutError, BlockingIOError) as exc:
        # BlockingIOError: a unix socket's backlog full, its listener not accepting.
        sock.close()
        raise bound.busy(where) from exc
    except (OSError, ValueError) as exc:  # jeepney's AuthenticationError is a ValueError
        sock.close()
        raise BusError("no-bus", f"{where}: {exc}") from exc
    return sock
