"""The seam between the CRI client and the wire: one unary gRPC call as bytes in, bytes out
(``UnaryTransport``), and the one error every failed call raises (``CriError``).

Two transports implement it: ``h2_unary.H2UnaryTransport`` (pure Python over ``h2``; the
default, and the daemon's) and ``grpc_transport.GrpcTransport`` (grpcio; the test lab's).
Neither this module nor the error depends on a gRPC library.
"""

from __future__ import annotations

from typing import Protocol

from cpuset_adapters.grpc_status import code_name


class CriError(Exception):
    """A CRI call failed: ``code`` is the gRPC status (an int, ``code_name`` its canonical
    name), ``details`` the runtime's message (``grpc-message``, decoded)."""

    def __init__(self, method: str, code: int, details: str) -> None:
        self.method = method
        self.code = int(code)
        self.details = details
        super().__init__(f"CRI {method} failed: {self.code_name}: {details}")

    @property
    def code_name(self) -> str:
        """The status code's name, e.g. ``"UNKNOWN"`` or ``"NOT_FOUND"``."""
        return code_name(self.code)


class UnaryTransport(Protocol):
    """One unary gRPC call to the runtime's socket."""

    def unary(self, path: str, request: bytes, timeout: float) -> bytes:
        """Send the serialized ``request`` to ``path`` (``/runtime.v1.RuntimeService/Version``)
        and return the serialized response; the whole call ends within ``timeout`` seconds.
        Raises ``CriError`` for any failure: the runtime's status, no socket (UNAVAILABLE),
        the deadline (DEADLINE_EXCEEDED), a broken connection or malformed answer."""
        ...

    def close(self) -> None:
        """Release what the transport holds (idempotent)."""
        ...


def method_of(path: str) -> str:
    """The method's own name (``Version``) from its full path, as ``CriError.method`` has it."""
    return path.rsplit("/", 1)[-1]
