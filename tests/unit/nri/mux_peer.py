"""What the trunk multiplexer tests share: the runtime's raw end of a socketpair (Peer) and a
started multiplexer facing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from cpuset_adapters.nri.mux import Multiplexer, Reply
from cpuset_adapters.nri.mux_frames import encode_frame
from cpuset_adapters.nri.ttrpc import RequestEnvelope
from tests.support.nri_runtime import HANG_GUARD

RUNTIME = "nri.pkg.api.v1alpha1.Runtime"


def run(coro: Coroutine[Any, Any, None], timeout: float = HANG_GUARD) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(timeout):
            await coro
    asyncio.run(bounded())


class Peer:
    """The runtime's end of a socketpair, speaking raw bytes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send_message(self, conn: int, stream: int, mtype: int, data: bytes) -> None:
        await self.send(encode_frame(conn, struct.pack(">IIBB", len(data), stream, mtype, 0)
                                     + data))

    async def frame(self) -> tuple[int, bytes]:
        conn, length = struct.unpack(">II", await self.reader.readexactly(8))
        return conn, await self.reader.readexactly(length)

    async def message(self) -> tuple[int, int, int, bytes, list[int]]:
        """One ttrpc message (conn, stream, type, data) and the frame sizes that carried it."""
        conn, first = await self.frame()
        sizes = [len(first)]
        length, stream, mtype, _ = struct.unpack(">IIBB", first[:10])
        data = first[10:]
        while len(data) < length:
            more_conn, more = await self.frame()
            assert more_conn == conn
            sizes.append(len(more))
            data += more
        assert len(data) == length, "a frame ran past the end of its message"
        return conn, stream, mtype, data, sizes

    async def eof(self) -> bool:
        return await self.reader.read(1) == b""


Handler = Callable[[RequestEnvelope], Awaitable[Reply]]


async def _echo(request: RequestEnvelope) -> Reply:
    return Reply(request.payload)


@contextlib.asynccontextmanager
async def trunk(handler: Handler = _echo) -> AsyncIterator[tuple[Multiplexer, Peer]]:
    """A started multiplexer and the raw peer at the other end of its socket."""
    ours, theirs = socket.socketpair()
    mux = Multiplexer(*await asyncio.open_unix_connection(sock=ours), handler)
    mux.start()
    peer = Peer(*await asyncio.open_unix_connection(sock=theirs))
    try:
        yield mux, peer
    finally:
        await mux.aclose()
        peer.writer.close()
        with contextlib.suppress(OSError):
            await peer.writer.wait_closed()
