"""The ttrpc server on the trunk's served connection (fact sheet §3.3): each request's stream id
checked as the Go server checks it, the request served in its own task, the reply written back.

The multiplexer (``mux``) feeds it the payloads of its connection and gives it the trunk's send
and close; the server owns the serving tasks, which the multiplexer cancels when the trunk ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from cpuset_adapters.grpc_status import StatusCode
from cpuset_adapters.nri.ttrpc import (
    ConnectionLostError,
    MessageDecoder,
    MessageTooLargeError,
    MessageType,
    ProtocolError,
    RequestEnvelope,
    RpcError,
    decode_request,
    encode_error_response,
    encode_message,
    encode_response,
)

# The trunk's logger: what the server logs is the trunk's story, under the name operators know.
_logger = logging.getLogger("nri_cpuset.nri.mux")


@dataclass(frozen=True, slots=True)
class Reply:
    """What a served request answers: a payload (``code`` 0) or an error status.

    ``close_after`` ends the trunk once the reply has been written.
    """

    payload: bytes = b""
    code: int = StatusCode.OK
    message: str = ""
    close_after: bool = False

    @classmethod
    def error(cls, code: int, message: str, *, close_after: bool = False) -> Reply:
        return cls(code=code, message=message, close_after=close_after)


RequestHandler = Callable[[RequestEnvelope], Awaitable[Reply]]
"""Serves one request of the served connection. Raising :class:`RpcError` answers with that
status; any other exception is logged and answered with INTERNAL."""


class TtrpcServer:
    """Serves the requests of connection ``conn_id`` with ``handler``, concurrently.

    ``send`` writes one message on the connection (raising :class:`ConnectionLostError` once the
    trunk is gone); ``close`` ends the trunk, with a reason.
    """

    def __init__(self, conn_id: int, handler: RequestHandler, *,
                 send: Callable[[bytes], Awaitable[None]],
                 close: Callable[[str], None]) -> None:
        self._conn_id = conn_id
        self._handler = handler
        self._send = send
        self._close = close
        self._requests = MessageDecoder()
        self._last_served_stream = 0
        self.tasks: set[asyncio.Task[None]] = set()
        """The requests being served."""

    @property
    def mid_message(self) -> bool:
        """Whether part of a request has arrived and the rest has not."""
        return bool(self._requests.buffered)

    def feed(self, piece: bytes) -> None:
        """Take the next bytes of the connection; serve every request they complete. Raises
        :class:`ProtocolError` for bytes that are not requests."""
        for message in self._requests.feed(piece):
            self._on_request(message.stream_id, message.type, message.data)

    def _on_request(self, stream_id: int, mtype: int, data: bytes) -> None:
        if mtype != MessageType.REQUEST:
            raise ProtocolError(f"unexpected ttrpc message type {mtype} on conn "
                                f"{self._conn_id} (stream {stream_id})")
        # The Go server's checks and wording (§3.3).
        if stream_id % 2 == 0:
            self._spawn(self._respond(stream_id, Reply.error(
                StatusCode.INVALID_ARGUMENT, "StreamID must be odd for client initiated streams")))
            return
        if stream_id <= self._last_served_stream:
            self._spawn(self._respond(stream_id, Reply.error(
                StatusCode.INVALID_ARGUMENT, "StreamID cannot be re-used and must increment")))
            return
        self._last_served_stream = stream_id
        request = decode_request(data)
        self._spawn(self._serve(stream_id, request))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _serve(self, stream_id: int, request: RequestEnvelope) -> None:
        try:
            reply = await self._handler(request)
        except RpcError as exc:
            reply = Reply.error(exc.code, exc.message)
        except Exception:
            _logger.exception("serving %s/%s failed", request.service, request.method)
            reply = Reply.error(StatusCode.INTERNAL, f"{request.method}: internal plugin error")
        await self._respond(stream_id, reply)

    async def _respond(self, stream_id: int, reply: Reply) -> None:
        if reply.code == StatusCode.OK:
            data = encode_response(reply.payload)
        else:
            data = encode_error_response(reply.code, reply.message)
        try:
            message = encode_message(stream_id, MessageType.RESPONSE, data)
        except MessageTooLargeError as exc:
            _logger.error("NRI trunk: reply on stream %d not sent: %s", stream_id, exc)
            message = encode_message(stream_id, MessageType.RESPONSE, encode_error_response(
                StatusCode.RESOURCE_EXHAUSTED, str(exc)))
        try:
            await self._send(message)
        except ConnectionLostError:
            return  # nobody is left to answer
        if reply.close_after:
            self._close(f"closed after replying: {reply.message or 'OK'}")
