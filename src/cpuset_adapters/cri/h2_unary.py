"""The h2 transport: unary gRPC calls over HTTP/2 with prior knowledge (h2c) on the runtime's
unix socket, in pure Python on the ``h2`` state machine (the frames: ``h2_link``). The daemon's
CRI reads use it so that it never imports grpc (decision 35).

One connection is kept between calls and reused, not one opened per call: on the lab's
containerd 1.7.24 (``bench/cri_transports.py``, 100 containers) a small call (Version) took
1.44 ms at the median on a new connection against 0.69 ms on a kept one (grpcio: 0.68 ms), and
a CRI inventory makes one call per pod and per container. A kept connection is checked before
reuse without waiting (a runtime restarted meanwhile has closed it, or sent GOAWAY) and
discarded after any failure other than the runtime's own answer, so the next call opens a
fresh one; ``close`` closes it. Calls from several threads at once each get a connection
(only one is kept).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Final

from cpuset_adapters.cri.grpc_wire import MAX_MESSAGE, frame_message, grpc_timeout
from cpuset_adapters.cri.h2_link import H2Link
from cpuset_adapters.cri.transport import CriError, method_of
from cpuset_adapters.grpc_status import StatusCode

#: The initial stream and connection window announced: 16 MiB, the largest message accepted.
DEFAULT_WINDOW: Final = MAX_MESSAGE


class H2UnaryTransport:
    """A ``UnaryTransport`` to the unix socket at ``path`` (see the module's docstring for
    how connections are kept). ``window`` is the initial flow-control window announced
    (tests make it small)."""

    def __init__(self, path: str, *, window: int = DEFAULT_WINDOW,
                 authority: str = "localhost") -> None:
        self.path = path
        self.window = window
        self.authority = authority
        self._idle: H2Link | None = None
        self._lock = threading.Lock()  # guards _idle only, never held across a call

    def unary(self, path: str, request: bytes, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        method = method_of(path)
        link = self._take() or H2Link(_connect(self.path, method, deadline), self.window)
        try:
            return link.call(method, self._headers(path, timeout), frame_message(request),
                             deadline)
        finally:
            self._give_back(link)

    def close(self) -> None:
        """Closes the kept connection, if any (the transport stays usable)."""
        with self._lock:
            idle, self._idle = self._idle, None
        if idle is not None:
            idle.close()

    def _take(self) -> H2Link | None:
        with self._lock:
            idle, self._idle = self._idle, None
        if idle is not None and not idle.reusable():
            idle.close()
            return None
        return idle

    def _give_back(self, link: H2Link) -> None:
        if not link.broken:
            with self._lock:
                if self._idle is None:
                    self._idle = link
                    return
        link.close()  # broken, or another call's connection is kept already

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
