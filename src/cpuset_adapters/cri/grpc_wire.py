"""What gRPC adds to HTTP/2 for a unary call, without a gRPC library: the 5-byte message
prefix, the ``grpc-timeout`` and ``grpc-message`` encodings, and the status a call gets when
the HTTP/2 layer ends it instead of the server's ``grpc-status`` (gRPC's PROTOCOL-HTTP2.md and
http-grpc-status-mapping.md)."""

from __future__ import annotations

import math
from typing import Final
from urllib.parse import unquote

from cpuset_adapters.grpc_status import StatusCode

#: The largest response accepted: the kubelet's own limit for CRI messages (16 MiB).
MAX_MESSAGE: Final = 16 * 2**20

_COMPRESSED: Final = 0x01

# RST_STREAM error codes (RFC 9113, 7) → gRPC status; every code not listed is INTERNAL.
_RESET_STATUS: Final = {
    0x7: StatusCode.UNAVAILABLE,          # REFUSED_STREAM: the server did not process it
    0x8: StatusCode.CANCELLED,            # CANCEL
    0xB: StatusCode.RESOURCE_EXHAUSTED,   # ENHANCE_YOUR_CALM
    0xC: StatusCode.PERMISSION_DENIED,    # INADEQUATE_SECURITY
}

# An HTTP status without grpc-status (a proxy, or not a gRPC server) → gRPC status.
_HTTP_STATUS: Final = {
    400: StatusCode.INTERNAL, 401: StatusCode.UNAUTHENTICATED, 403: StatusCode.PERMISSION_DENIED,
    404: StatusCode.UNIMPLEMENTED, 429: StatusCode.UNAVAILABLE, 502: StatusCode.UNAVAILABLE,
    503: StatusCode.UNAVAILABLE, 504: StatusCode.UNAVAILABLE,
}


class WireError(Exception):
    """The answer is not a well-formed unary gRPC response; ``code`` is the status to report."""

    def __init__(self, code: StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def frame_message(message: bytes) -> bytes:
    """One uncompressed gRPC message: flag 0, 4-byte big-endian length, the bytes."""
    return b"\x00" + len(message).to_bytes(4, "big") + message


def unframe_message(body: bytes) -> bytes:
    """The single message of a unary response body. Raises ``WireError`` (INTERNAL) for no
    message, a compressed one (none was asked for) or anything but exactly one."""
    if len(body) < 5:
        raise WireError(StatusCode.INTERNAL, f"the response has no message ({len(body)} bytes)")
    if body[0] & _COMPRESSED:
        raise WireError(StatusCode.INTERNAL, "the response is compressed, but no compression "
                                             "was offered")
    length = int.from_bytes(body[1:5], "big")
    if len(body) != 5 + length:
        raise WireError(StatusCode.INTERNAL, f"the response holds {len(body) - 5} bytes where "
                                             f"its prefix says {length}: not one message")
    return body[5:]


def grpc_timeout(seconds: float) -> str:
    """``grpc-timeout``: at most 8 digits and a unit; milliseconds, rounded up."""
    millis = max(1, math.ceil(seconds * 1000))
    if millis < 10**8:
        return f"{millis}m"
    return f"{min(math.ceil(seconds), 10**8 - 1)}S"


def decode_message(raw: bytes) -> str:
    """``grpc-message``: percent-encoded UTF-8; undecodable bytes become U+FFFD."""
    return unquote(raw.decode("ascii", "replace"), errors="replace")


def reset_status(error_code: int, *, deadline_passed: bool) -> StatusCode:
    """The status of a call the server reset (a CANCEL after the deadline is the deadline)."""
    if error_code == 0x8 and deadline_passed:
        return StatusCode.DEADLINE_EXCEEDED
    return _RESET_STATUS.get(error_code, StatusCode.INTERNAL)


def http_status(status: int) -> StatusCode:
    """The status of a response that carries an HTTP status but no ``grpc-status``."""
    return _HTTP_STATUS.get(status, StatusCode.UNKNOWN)
