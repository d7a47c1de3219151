"""The trunk multiplexer's server side (conn 1): serving requests, big requests and replies,
handler errors as statuses, bad stream ids and closing after a reply.
"""

from __future__ import annotations

import struct

from cpuset_adapters.grpc_status import StatusCode
from cpuset_adapters.nri import ttrpc
from cpuset_adapters.nri.mux import Reply
from cpuset_adapters.nri.mux_frames import encode_frame
from cpuset_adapters.nri.ttrpc import MessageType, RequestEnvelope
from tests.unit.nri.mux_peer import run, trunk

PLUGIN = "nri.pkg.api.v1alpha1.Plugin"


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
