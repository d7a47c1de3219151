"""The NRI trunk's framing (fact sheet §2): ``uint32 conn id | uint32 length | payload``
(big-endian), the §2.4 rule for cutting a ttrpc message into frames, and a decoder cutting the
byte stream back into pieces per conn id. Pure: no I/O.

The §2.4 rule exists because the Go reader hands each frame to a 4096-byte bufio buffer: a
ttrpc message goes out as its first ``min(len, 4096)`` bytes in one frame and the whole
remainder in one more.
"""

from __future__ import annotations

import struct

from cpuset_adapters.nri.ttrpc import ProtocolError

FRAME_HEADER_LENGTH = 8
PLUGIN_SERVICE_CONN = 1
"""Conn id of the Plugin service: the runtime is the ttrpc client, we are the server."""
RUNTIME_SERVICE_CONN = 2
"""Conn id of the Runtime service: we are the ttrpc client, the runtime is the server."""

FIRST_FRAME_LIMIT = 4096
"""The Go receiver's bufio buffer: a frame arriving while it reads a header must fit in it."""

MAX_FRAME_LENGTH = 1 << 24
"""Largest frame a Go mux writer produces (v0.6.1's ``maxPayloadSize``; v0.12 writes at most
4 MiB + 10). The Go reader does not check, but allocating whatever a length field claims would
let one corrupt frame take the process's memory."""

_FRAME_HEADER = struct.Struct(">II")


def encode_frame(conn_id: int, payload: bytes) -> bytes:
    """One mux frame: the 8-byte header and ``payload``."""
    return _FRAME_HEADER.pack(conn_id, len(payload)) + payload


def frame_message(conn_id: int, message: bytes) -> list[bytes]:
    """The frames that carry one complete ttrpc ``message`` (§2.4): its first 4096 bytes, then
    the entire remainder as one more frame. No zero-length frames."""
    if len(message) <= FIRST_FRAME_LIMIT:
        return [encode_frame(conn_id, message)] if message else []
    return [encode_frame(conn_id, message[:FIRST_FRAME_LIMIT]),
            encode_frame(conn_id, message[FIRST_FRAME_LIMIT:])]


class FrameDecoder:
    """Cuts the trunk's byte stream into ``(conn id, payload piece)`` pairs.

    Payload is handed on as soon as it arrives, not once the frame is complete: a logical
    connection is a byte stream, so the pieces concatenate, and a 16 MiB frame is never held
    twice.
    """

    def __init__(self, max_frame: int = MAX_FRAME_LENGTH) -> None:
        self._header = bytearray()
        self._conn_id = 0
        self._remaining = 0
        self._max_frame = max_frame

    @property
    def mid_frame(self) -> bool:
        """True while part of a frame (header or payload) has been seen but not all of it."""
        return bool(self._header) or self._remaining > 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """Consume ``data``; raises :class:`ProtocolError` for a frame over the size limit."""
        pieces: list[tuple[int, bytes]] = []
        view = memoryview(data)
        while view:
            if self._remaining:
                take = min(self._remaining, len(view))
                pieces.append((self._conn_id, bytes(view[:take])))
                self._remaining -= take
                view = view[take:]
                continue
            need = FRAME_HEADER_LENGTH - len(self._header)
            self._header += view[:need]
            view = view[need:]
            if len(self._header) < FRAME_HEADER_LENGTH:
                break
            conn_id, length = _FRAME_HEADER.unpack(self._header)
            self._header.clear()
            if length > self._max_frame:
                raise ProtocolError(
                    f"mux frame for conn {conn_id} claims {length} bytes "
                    f"(limit {self._max_frame})")
            self._conn_id, self._remaining = conn_id, length
        return pieces
