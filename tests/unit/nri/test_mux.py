"""The trunk multiplexer: frame layout, the §2.4 sending rule, our client's stream ids, serving,
and what malformed or hostile input does (it ends the connection cleanly, never a crash)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import pytest

from cpuset_adapters.nri import ttrpc
from cpuset_adapters.nri.mux import ConnectionLostError, Multiplexer, Reply
from cpuset_adapters.nri.mux_frames import (
    MAX_FRAME_LENGTH,
    FrameDecoder,
    encode_frame,
    frame_message,
)
from cpuset_adapters.nri.ttrpc import MessageType, ProtocolError, RequestEnvelope, StatusCode

from .test_ttrpc import EMPTY_REPLY, REGISTER_MESSAGE, REGISTER_PAYLOAD

RUNTIME = "nri.pkg.api.v1alpha1.Runtime"
PLUGIN = "nri.pkg.api.v1alpha1.Plugin"


def run(coro: Coroutine[Any, Any, None], timeout: float = 5.0) -> None:
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


# -- pure framing ----------------------------------------------------------------------------


def test_frame_header_is_conn_id_and_length_big_endian() -> None:
    assert encode_frame(2, b"abc") == bytes.fromhex("00000002 00000003") + b"abc"


@pytest.mark.parametrize(("size", "frames"), [
    (10, [10]), (4096, [4096]), (4097, [4096, 1]), (5_000_000, [4096, 5_000_000 - 4096])])
def test_a_message_goes_out_as_its_first_4096_bytes_then_the_whole_rest(size: int,
                                                                      frames: list[int]) -> None:
    message = bytes(range(256)) * (size // 256) + bytes(size % 256)
    out = frame_message(1, message)
    assert [struct.unpack(">II", f[:8]) for f in out] == [(1, n) for n in frames]
    assert b"".join(f[8:] for f in out) == message


def test_no_zero_length_frames() -> None:
    assert frame_message(1, b"") == []


def test_frame_decoder_handles_a_frame_split_across_reads() -> None:
    wire = encode_frame(2, b"hello") + encode_frame(1, b"world!")
    decoder = FrameDecoder()
    pieces = []
    for i in range(len(wire)):
        pieces += decoder.feed(wire[i:i + 1])
    assert [(c, b"".join(p for cc, p in pieces if cc == c)) for c in (1, 2)] == [
        (1, b"world!"), (2, b"hello")]
    assert not decoder.mid_frame


def test_frame_decoder_returns_two_frames_of_one_read() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(encode_frame(2, b"a") + encode_frame(1, b"bc") + b"\x00\x00") == [
        (2, b"a"), (1, b"bc")]
    assert decoder.mid_frame


def test_frame_decoder_refuses_an_oversized_length_before_reading_it() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(struct.pack(">II", 2, MAX_FRAME_LENGTH)) == []
    with pytest.raises(ProtocolError, match="claims"):
        FrameDecoder().feed(struct.pack(">II", 2, MAX_FRAME_LENGTH + 1))


def test_frame_decoder_skips_zero_length_frames() -> None:
    assert FrameDecoder().feed(encode_frame(1, b"") + encode_frame(1, b"x")) == [(1, b"x")]


# -- the client side (conn 2) ----------------------------------------------------------------


def test_register_call_puts_the_worked_example_bytes_on_the_wire() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            call = asyncio.create_task(mux.call(RUNTIME, "RegisterPlugin", REGISTER_PAYLOAD,
                                                timeout=1.0))
            # §3.6: mux header 00000002 00000050 (conn 2, 80 bytes), then the ttrpc message
            assert await peer.reader.readexactly(8 + 80) == bytes.fromhex("00000002 00000050") \
                + REGISTER_MESSAGE
            await peer.send(bytes.fromhex("00000002 0000000a") + EMPTY_REPLY)
            assert await call == b""
    run(main())


def test_client_stream_ids_are_odd_and_increasing_and_replies_may_come_out_of_order() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            calls = [asyncio.create_task(mux.call(RUNTIME, "M", bytes([i]))) for i in range(3)]
            seen = [await peer.message() for _ in calls]
            assert [(conn, stream, mtype) for conn, stream, mtype, _, _ in seen] == [
                (2, 1, 1), (2, 3, 1), (2, 5, 1)]
            # two replies in one write, newest first
            replies = b"".join(
                encode_frame(2, ttrpc.encode_message(s, MessageType.RESPONSE,
                                                     ttrpc.encode_response(bytes([s]))))
                for s in (5, 3))
            await peer.send(replies)
            assert await calls[2] == b"\x05"
            assert await calls[1] == b"\x03"
            # the first reply, split across three writes
            last = encode_frame(2, ttrpc.encode_message(1, MessageType.RESPONSE,
                                                        ttrpc.encode_response(b"one")))
            for part in (last[:3], last[3:13], last[13:]):
                await peer.send(part)
                await asyncio.sleep(0.01)
            assert await calls[0] == b"one"
    run(main())


def test_an_error_status_raises_rpc_error_and_keeps_the_connection() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            call = asyncio.create_task(mux.call(RUNTIME, "UpdateContainers", b""))
            _, stream, _, _, _ = await peer.message()
            await peer.send_message(2, stream, MessageType.RESPONSE, ttrpc.encode_error_response(
                2, "NRI update of some containers failed"))
            with pytest.raises(ttrpc.RpcError) as caught:
                await call
            assert (caught.value.code, caught.value.message) == (
                2, "NRI update of some containers failed")
            assert not mux.closed
    run(main())


def test_a_call_times_out_and_its_late_reply_is_ignored() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            with pytest.raises(TimeoutError):
                await mux.call(RUNTIME, "Slow", b"", timeout=0.05)
            _, stream, _, data, _ = await peer.message()
            assert ttrpc.decode_request(data).timeout_nano == 50_000_000
            await peer.send_message(2, stream, MessageType.RESPONSE, ttrpc.encode_response(b""))
            follow = asyncio.create_task(mux.call(RUNTIME, "Next", b""))
            _, stream, _, _, _ = await peer.message()
            assert stream == 3
            await peer.send_message(2, stream, MessageType.RESPONSE, ttrpc.encode_response(b"ok"))
            assert await follow == b"ok"
    run(main())


def test_a_request_over_4_mib_is_refused_locally() -> None:
    async def main() -> None:
        async with trunk() as (mux, _peer):
            with pytest.raises(ttrpc.MessageTooLargeError):
                await mux.call(RUNTIME, "UpdateContainers", bytes(ttrpc.MAX_MESSAGE_LENGTH))
            assert not mux.closed
    run(main())


def test_calling_a_closed_trunk_raises_connection_lost() -> None:
    async def main() -> None:
        async with trunk() as (mux, _peer):
            await mux.aclose("bye")
            with pytest.raises(ConnectionLostError, match="bye"):
                await mux.call(RUNTIME, "M", b"")
    run(main())


# -- the server side (conn 1) ----------------------------------------------------------------


def test_requests_are_served_and_big_replies_follow_the_4096_then_rest_rule() -> None:
    async def handler(request: RequestEnvelope) -> Reply:
        return Reply(request.payload * 3)

    async def main() -> None:
        async with trunk(handler) as (_mux, peer):
            payload = ttrpc.encode_request(PLUGIN, "Configure", bytes(range(256)) * 20)
            await peer.send_message(1, 1, MessageType.REQUEST, payload)
            conn, stream, mtype, data, sizes = await peer.message()
            assert (conn, stream, mtype) == (1, 1, MessageType.RESPONSE)
            assert ttrpc.decode_response(data).payload == bytes(range(256)) * 60
            assert sizes == [4096, 10 + len(data) - 4096]
    run(main())


def test_a_request_over_4_mib_from_the_runtime_is_accepted() -> None:
    async def handler(request: RequestEnvelope) -> Reply:
        return Reply(str(len(request.payload)).encode())

    async def main() -> None:
        async with trunk(handler) as (_mux, peer):
            request = ttrpc.encode_request(PLUGIN, "Synchronize", bytes(5_000_000))
            message = struct.pack(">IIBB", len(request), 1, 1, 0) + request
            # as Go's v0.6.1 writer sends it: a 4096-byte frame, then the rest in one frame
            await peer.send(encode_frame(1, message[:4096]) + encode_frame(1, message[4096:]))
            _, _, _, data, _ = await peer.message()
            assert ttrpc.decode_response(data).payload == b"5000000"
    run(main())


def test_handler_errors_become_statuses() -> None:
    async def handler(request: RequestEnvelope) -> Reply:
        if request.method == "Rpc":
            raise ttrpc.RpcError(StatusCode.NOT_FOUND, "nope")
        if request.method == "Bug":
            raise KeyError("oops")
        return Reply.error(StatusCode.UNKNOWN, "refused")

    async def main() -> None:
        async with trunk(handler) as (mux, peer):
            for stream, method in ((1, "Rpc"), (3, "Bug"), (5, "Refuse")):
                await peer.send_message(1, stream, MessageType.REQUEST,
                                        ttrpc.encode_request(PLUGIN, method, b""))
            got = {}
            for _ in range(3):
                _, stream, _, data, _ = await peer.message()
                response = ttrpc.decode_response(data)
                got[stream] = (response.code, response.payload)
            assert got == {1: (5, b""), 3: (13, b""), 5: (2, b"")}
            assert not mux.closed
    run(main())


def test_even_or_reused_stream_ids_get_invalid_argument_like_the_go_server() -> None:
    async def main() -> None:
        async with trunk() as (_mux, peer):
            request = ttrpc.encode_request(PLUGIN, "Configure", b"x")
            await peer.send_message(1, 2, MessageType.REQUEST, request)
            _, stream, _, data, _ = await peer.message()
            assert (stream, ttrpc.decode_response(data).code) == (2, 3)
            assert ttrpc.decode_response(data).message == \
                "StreamID must be odd for client initiated streams"
            await peer.send_message(1, 5, MessageType.REQUEST, request)
            await peer.message()
            await peer.send_message(1, 3, MessageType.REQUEST, request)
            _, stream, _, data, _ = await peer.message()
            assert ttrpc.decode_response(data).message == \
                "StreamID cannot be re-used and must increment"
    run(main())


def test_close_after_reply_ends_the_trunk_once_the_reply_is_out() -> None:
    async def handler(request: RequestEnvelope) -> Reply:
        return Reply(b"bye", close_after=True)

    async def main() -> None:
        async with trunk(handler) as (mux, peer):
            await peer.send_message(1, 1, MessageType.REQUEST,
                                    ttrpc.encode_request(PLUGIN, "S", b""))
            _, _, _, data, _ = await peer.message()
            assert ttrpc.decode_response(data).payload == b"bye"
            assert await peer.eof()
            assert "closed after replying" in await mux.wait_closed()
    run(main())


def test_a_reply_over_4_mib_becomes_resource_exhausted() -> None:
    async def handler(request: RequestEnvelope) -> Reply:
        return Reply(bytes(ttrpc.MAX_MESSAGE_LENGTH))

    async def main() -> None:
        async with trunk(handler) as (_mux, peer):
            await peer.send_message(1, 1, MessageType.REQUEST,
                                    ttrpc.encode_request(PLUGIN, "S", b""))
            _, _, _, data, _ = await peer.message()
            assert ttrpc.decode_response(data).code == StatusCode.RESOURCE_EXHAUSTED
    run(main())


# -- malformed and hostile input -------------------------------------------------------------


async def _expect_lost(mux: Multiplexer, peer: Peer, hostile: bytes, reason: str) -> None:
    call = asyncio.create_task(mux.call(RUNTIME, "Pending", b""))
    await peer.message()
    await peer.send(hostile)
    with pytest.raises(ConnectionLostError, match=reason):
        await call
    assert reason in await mux.wait_closed()
    assert await peer.eof()


def test_an_oversized_frame_length_ends_the_connection() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            await _expect_lost(mux, peer, struct.pack(">II", 2, 0xFFFFFFFF), "protocol error")
    run(main())


def test_an_oversized_ttrpc_length_ends_the_connection() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            await _expect_lost(mux, peer, encode_frame(2, bytes.fromhex("7fffffff 00000001 02 00")),
                               "exceeds")
    run(main())


def test_a_truncated_frame_then_eof_ends_the_connection() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            call = asyncio.create_task(mux.call(RUNTIME, "Pending", b""))
            await peer.message()
            await peer.send(struct.pack(">II", 2, 100) + b"only part")
            peer.writer.close()
            with pytest.raises(ConnectionLostError, match="truncated"):
                await call
    run(main())


def test_eof_mid_message_and_plain_eof_end_the_connection() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            await peer.send(encode_frame(2, bytes.fromhex("00000010 00000001 02 00 0102")))
            peer.writer.close()
            assert "middle of a ttrpc message" in await mux.wait_closed()
        async with trunk() as (mux, peer):
            peer.writer.close()
            assert await mux.wait_closed() == "connection closed by the peer"
    run(main())


def test_garbage_protobuf_in_a_response_ends_the_connection() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            await _expect_lost(mux, peer, encode_frame(2, bytes.fromhex("00000002 00000001 02 00")
                                                       + b"\xff\xff"), "undecodable")
    run(main())


def test_garbage_protobuf_in_a_request_ends_the_connection() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            await _expect_lost(mux, peer, encode_frame(1, bytes.fromhex("00000003 00000001 01 00")
                                                       + b"\x0a\x05a"), "undecodable")
    run(main())


def test_a_message_type_that_does_not_belong_ends_the_connection() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            # a Request where only Responses may come (Go's client: ErrProtocol)
            await _expect_lost(mux, peer, encode_frame(2, bytes.fromhex("00000000 00000001 01 00")),
                               "unexpected ttrpc message type 1")
        async with trunk() as (mux, peer):
            # Data (streaming) on the served connection
            await _expect_lost(mux, peer, encode_frame(1, bytes.fromhex("00000000 00000001 03 00")),
                               "unexpected ttrpc message type 3")
    run(main())


def test_frames_for_an_unknown_connection_id_are_dropped_as_go_does(
        caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            call = asyncio.create_task(mux.call(RUNTIME, "M", b""))
            _, stream, _, _, _ = await peer.message()
            await peer.send(encode_frame(7, b"\x00" * 40) + encode_frame(0, b"zz")
                            + encode_frame(7, b"more"))
            await peer.send_message(2, stream, MessageType.RESPONSE, ttrpc.encode_response(b"fine"))
            assert await call == b"fine"
            assert not mux.closed

    with caplog.at_level(logging.WARNING, logger="nri_cpuset.nri.mux"):
        run(main())
    warnings = [r.getMessage() for r in caplog.records if "unknown connection id" in
                r.getMessage()]
    assert warnings == ["NRI trunk: dropping frames for unknown connection id 7",
                        "NRI trunk: dropping frames for unknown connection id 0"]


def test_a_response_for_no_pending_call_is_ignored() -> None:
    async def main() -> None:
        async with trunk() as (mux, peer):
            await peer.send_message(2, 99, MessageType.RESPONSE, ttrpc.encode_response(b""))
            call = asyncio.create_task(mux.call(RUNTIME, "M", b""))
            _, stream, _, _, _ = await peer.message()
            await peer.send_message(2, stream, MessageType.RESPONSE, ttrpc.encode_response(b"ok"))
            assert await call == b"ok"
    run(main())


def test_random_garbage_never_hangs_or_crashes() -> None:
    import random

    async def main() -> None:
        rng = random.Random(7)
        for _ in range(30):
            async with trunk() as (mux, peer):
                noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
                await peer.send(noise)
                peer.writer.close()
                reason = await mux.wait_closed()
                assert reason
    run(main())
