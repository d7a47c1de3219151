"""The trunk multiplexer on malformed or hostile input: it ends the connection cleanly (or drops
the frame as Go does), never a crash or a hang.
"""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest

from cpuset_adapters.nri import ttrpc
from cpuset_adapters.nri.mux import ConnectionLostError, Multiplexer
from cpuset_adapters.nri.mux_frames import encode_frame
from cpuset_adapters.nri.ttrpc import MessageType
from tests.unit.nri.mux_peer import RUNTIME, Peer, run, trunk

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
