"""The mux and ttrpc framing as the Go runtime writes and reads it (§2): what its 4096-byte
``bufio.Writer`` makes of a message, and a receiver that reads each frame as a datagram through
ttrpc's ``bufio.Reader``, so a frame the Go side could not read fails here too (§2.4)."""

from __future__ import annotations

import asyncio
import struct

BUFIO_SIZE = 4096  # ttrpc channel.go newChannel: bufio.NewReader(conn) default size
TTRPC_MAX = 4 << 20
REQUEST, RESPONSE = 1, 2


class Closed(Exception):  # noqa: N818
    """The logical connection reached EOF."""


class FramingViolation(Exception):  # noqa: N818
    """A frame the Go side could not have read (§2.4)."""


class GoConnReader:
    """One logical connection as the Go runtime reads it: frames are datagrams, read through
    a 4096-byte bufio.Reader, by io.ReadFull."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._buf = bytearray()

    async def _frame(self, cap: int) -> bytes:
        frame = await self.frames.get()
        if frame is None:
            raise Closed("EOF")
        if len(frame) > cap:  # mux.go conn.Read
            raise FramingViolation(f"frame of {len(frame)} bytes read into a {cap}-byte "
                                   "buffer: cannot allocate memory")
        return frame

    async def _read(self, n: int) -> bytes:  # bufio.Reader.Read
        if not self._buf:
            if n >= BUFIO_SIZE:
                return await self._frame(n)
            self._buf += await self._frame(BUFIO_SIZE)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def read_full(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            out += await self._read(n - len(out))
        return bytes(out)

    async def message(self) -> tuple[int, int, int, bytes]:
        length, stream, mtype, _flags = struct.unpack(">IIBB", await self.read_full(10))
        data = await self.read_full(length)
        return stream, mtype, length, data


def mux_frames(conn: int, message: bytes) -> list[bytes]:
    """What Go's bufio.Writer(4096) over the mux produces for one message (§2.4)."""
    pieces = [message[:BUFIO_SIZE], message[BUFIO_SIZE:]]
    return [struct.pack(">II", conn, len(p)) + p for p in pieces if p]


def ttrpc_message(stream: int, mtype: int, data: bytes) -> bytes:
    return struct.pack(">IIBB", len(data), stream, mtype, 0) + data
