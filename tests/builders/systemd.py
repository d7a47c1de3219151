"""A stand-in for systemd's notification socket: a bound unix datagram socket and its path."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def notify_manager(directory: Path, *, timeout: float) -> Iterator[tuple[str, socket.socket]]:
    """Where ``NOTIFY_SOCKET`` would point, and the socket reading it (``timeout`` 0:
    non-blocking)."""
    path = str(directory / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(timeout)
        yield path, sock
