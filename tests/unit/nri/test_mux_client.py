"""The trunk multiplexer's client side (conn 2): the wire bytes of a call, odd increasing stream
ids, error statuses, timeouts, size limits and a closed trunk.
"""

from __future__ import annotations

import asyncio

import pytest

from cpuset_adapters.nri import ttrpc
from cpuset_adapters.nri.mux import ConnectionLostError
from cpuset_adapters.nri.mux_frames import encode_frame
from cpuset_adapters.nri.ttrpc import MessageType
from tests.unit.nri.mux_peer import RUNTIME, run, trunk

from .test_ttrpc import EMPTY_REPLY, REGISTER_MESSAGE, REGISTER_PAYLOAD

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
