"""The NRI trunk: the connection multiplexer over one AF_UNIX stream socket, and the ttrpc
client and server that ride on its logical connections (fact sheet §2, §3.3); the server side is
``ttrpc_server``'s.

Every byte on the socket belongs to a frame (``mux_frames``: conn id, length, payload). The
payloads of one conn id form one ttrpc byte stream. Conn 1 carries the ``Plugin`` service,
which the plugin *serves*; conn 2 carries the ``Runtime`` service, which the plugin *calls*
(§2.2). Opening and closing a logical connection sends nothing; the session
ends when the socket does.

Sending follows the §2.4 rule (``mux_frames.frame_message``): the frames of one message are
never mixed with another message's, under one trunk write lock.

Malformed input (an oversized length, garbage protobuf, a message type that does not belong,
a truncated frame at EOF) ends the trunk: it is logged, every outstanding call fails with
:class:`ConnectionLostError`, and :meth:`Multiplexer.wait_closed` returns the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging

from cpuset_adapters.nri.mux_frames import (
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
    FrameDecoder,
    frame_message,
)
from cpuset_adapters.nri.ttrpc import (
    ConnectionLostError,
    MessageDecoder,
    MessageType,
    ProtocolError,
    ResponseEnvelope,
    decode_response,
    encode_message,
    encode_request,
)
from cpuset_adapters.nri.ttrpc_server import Reply, RequestHandler, TtrpcServer

__all__ = ["ConnectionLostError", "Multiplexer", "Reply", "RequestHandler"]

_logger = logging.getLogger("nri_cpuset.nri.mux")

_READ_CHUNK = 256 * 1024


class Multiplexer:
    """One trunk: a ttrpc server on ``serve_conn`` and a ttrpc client on ``call_conn``.

    Requests are served concurrently with our own outstanding calls, each in its own task.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 handler: RequestHandler, *, serve_conn: int = PLUGIN_SERVICE_CONN,
                 call_conn: int = RUNTIME_SERVICE_CONN) -> None:
        self._reader = reader
        self._writer = writer
        self._serve_conn = serve_conn
        self._call_conn = call_conn
        self._frames = FrameDecoder()
        self._server = TtrpcServer(serve_conn, handler,
                                   send=functools.partial(self._send, serve_conn),
                                   close=self.close)
        self._responses = MessageDecoder()
        self._write_lock = asyncio.Lock()
        self._next_stream_id = 1  # client streams: odd and strictly increasing (§3.3)
        self._pending: dict[int, asyncio.Future[ResponseEnvelope]] = {}
        self._reader_task: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()
        self._close_reason: str | None = None
        self._ignored_conns: set[int] = set()

    # -- lifecycle --

    def start(self) -> None:
        """Start reading the trunk (serving begins with the first request that arrives)."""
        if self._reader_task is None:
            self._reader_task = asyncio.create_task(self._read_loop(), name="nri-mux-reader")

    @property
    def closed(self) -> bool:
        return self._close_reason is not None

    @property
    def close_reason(self) -> str | None:
        return self._close_reason

    async def wait_closed(self) -> str:
        """Wait until the trunk is gone; return why."""
        await self._closed.wait()
        assert self._close_reason is not None
        return self._close_reason

    def close(self, reason: str = "closed locally") -> None:
        """End the trunk now: fail outstanding calls, stop serving, close the socket.

        Idempotent; the first reason is kept.
        """
        if self._close_reason is not None:
            return
        self._close_reason = reason
        _logger.debug("trunk closed: %s", reason)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLostError(reason))
        self._pending.clear()
        current = asyncio.current_task()
        if self._reader_task is not None and self._reader_task is not current:
            self._reader_task.cancel()
        for task in self._server.tasks:
            if task is not current:
                task.cancel()
        self._writer.close()
        self._closed.set()

    async def aclose(self, reason: str = "closed locally") -> None:
        """:meth:`close`, then wait for the reader and serving tasks and the socket to finish."""
        self.close(reason)
        current = asyncio.current_task()
        tasks = [t for t in (self._reader_task, *self._server.tasks)
                 if t is not None and t is not current]
        await asyncio.gather(*tasks, return_exceptions=True)
        # The peer may already have reset the socket; it is closed either way.
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()

    # -- client side --

    async def call(self, service: str, method: str, payload: bytes, *,
                   timeout: float | None = None) -> bytes:
        """Call ``service/method`` on the peer and return the response payload.

        Raises :class:`RpcError` for an error status, :class:`ConnectionLostError` when the trunk
        ends first, :class:`TimeoutError` after ``timeout`` seconds (sent to the peer as the
        request's deadline too), :class:`MessageTooLargeError` for a request over 4 MiB.
        """
        if self._close_reason is not None:
            raise ConnectionLostError(self._close_reason)
        stream_id = self._next_stream_id
        self._next_stream_id += 2
        timeout_nano = int(timeout * 1e9) if timeout is not None and timeout > 0 else 0
        message = encode_message(
            stream_id, MessageType.REQUEST,
            encode_request(service, method, payload, timeout_nano=timeout_nano))
        future: asyncio.Future[ResponseEnvelope] = asyncio.get_running_loop().create_future()
        self._pending[stream_id] = future
        try:
            await self._send(self._call_conn, message)
            async with asyncio.timeout(timeout):
                response = await future
        finally:
            self._pending.pop(stream_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: a close() racing a failed send is not news
        return response.payload_or_raise()

    # -- internals --

    async def _send(self, conn_id: int, message: bytes) -> None:
        frames = frame_message(conn_id, message)
        # Frames of different messages must not interleave (§2.4 rule 5). write() does not
        # yield, but drain() does: the lock keeps a later message from starting mid-drain.
        async with self._write_lock:
            if self._close_reason is not None:
                raise ConnectionLostError(self._close_reason)
            try:
                for frame in frames:
                    self._writer.write(frame)
                await self._writer.drain()
            except OSError as exc:
                self.close(f"write failed: {exc}")
                raise ConnectionLostError(f"write failed: {exc}") from exc

    async def _read_loop(self) -> None:
        reason = "reader stopped"
        try:
            while True:
                data = await self._reader.read(_READ_CHUNK)
                if not data:
                    reason = self._eof_reason()
                    break
                for conn_id, piece in self._frames.feed(data):
                    self._deliver(conn_id, piece)
        except ProtocolError as exc:
            reason = f"protocol error: {exc}"
            _logger.error("NRI trunk: %s; closing the connection", reason)
        except OSError as exc:
            reason = f"read failed: {exc}"
        except Exception:
            # A bug here must still end the trunk: the session waits for it to close.
            _logger.exception("NRI trunk reader failed")
            reason = "internal error in the trunk reader"
        finally:
            self.close(reason)

    def _eof_reason(self) -> str:
        if self._frames.mid_frame:
            reason = "connection closed in the middle of a frame (truncated)"
        elif self._server.mid_message or self._responses.buffered:
            reason = "connection closed in the middle of a ttrpc message"
        else:
            return "connection closed by the peer"
        _logger.warning("NRI trunk: %s", reason)
        return reason

    def _deliver(self, conn_id: int, piece: bytes) -> None:
        if conn_id == self._serve_conn:
            self._server.feed(piece)
        elif conn_id == self._call_conn:
            for message in self._responses.feed(piece):
                self._on_response(message.stream_id, message.type, message.data)
        elif conn_id not in self._ignored_conns:
            # The Go reader silently drops frames for a conn id nobody opened (§2.1); a newer
            # runtime might open more, so this is not a reason to end the session.
            self._ignored_conns.add(conn_id)
            _logger.warning("NRI trunk: dropping frames for unknown connection id %d", conn_id)

    def _on_response(self, stream_id: int, mtype: int, data: bytes) -> None:
        if mtype != MessageType.RESPONSE:
            raise ProtocolError(f"unexpected ttrpc message type {mtype} on conn "
                                f"{self._call_conn} (stream {stream_id})")
        response = decode_response(data)
        future = self._pending.pop(stream_id, None)
        if future is None:
            _logger.warning("NRI trunk: ignoring a response for stream %d, which no call awaits "
                         "(timed out or never sent)", stream_id)
            return
        if not future.done():
            future.set_result(response)
