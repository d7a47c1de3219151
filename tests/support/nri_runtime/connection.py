"""One plugin connection as containerd holds it: the mux over the socket, the two logical
connections (conn 1: the runtime calls the plugin; conn 2: the plugin calls the Runtime service)
and what the runtime learnt over them."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.proto import ttrpc_pb2
from tests.support.nri_runtime.errors import PluginGone
from tests.support.nri_runtime.framing import (
    REQUEST,
    RESPONSE,
    TTRPC_MAX,
    Closed,
    FramingViolation,
    GoConnReader,
    mux_frames,
    ttrpc_message,
)
from tests.support.nri_runtime.handshake import handshake
from tests.support.nri_runtime.runtime_service import serve
from tests.support.nri_runtime.versions import Profile

if TYPE_CHECKING:
    from tests.support.nri_runtime.double import RuntimeDouble

PLUGIN = "nri.pkg.api.v1alpha1.Plugin"


class _Oversized(Exception):  # noqa: N818
    """A request larger than this version's ttrpc sends (``Profile.send_limit``)."""


@dataclass
class PluginConnection:
    """One accepted plugin connection and what the runtime learnt over it."""

    runtime: RuntimeDouble
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    preinstalled: bool
    name: str = ""
    index: str = ""
    events: int | None = None
    sync_updates: list[pb.ContainerUpdate] = field(default_factory=list)
    sync_chunks: int = 0
    fell_back_to_state_change: bool = False
    close_reason: str = ""
    frames_in: list[tuple[int, int]] = field(default_factory=list)  # (conn, payload length)
    registered: asyncio.Event = field(default_factory=asyncio.Event)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    configured: asyncio.Event = field(default_factory=asyncio.Event)
    register_calls: int = 0
    left_out: str = ""
    """Why the runtime left this connection out of its plugins without closing it (v0.6.1
    after a failed Synchronize); empty while it is not."""
    _conns: dict[int, GoConnReader] = field(default_factory=dict)
    _pending: dict[int, asyncio.Future[ttrpc_pb2.Response]] = field(default_factory=dict)
    _tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    _next_stream: int = 1
    _last_plugin_stream: int = 0
    _write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def profile(self) -> Profile:
        return self.runtime.profile

    def start(self) -> None:
        self._conns = {1: GoConnReader(), 2: GoConnReader()}
        for coro in (self._read_trunk(), self._serve_runtime(), self._read_replies(),
                     handshake(self)):
            self._tasks.append(asyncio.create_task(coro))

    async def wait_stopped(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def close(self, reason: str) -> None:
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.closed.set()
        self.notify()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PluginGone(reason))
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        self.writer.close()

    def notify(self) -> None:
        """Wake whoever waits on the runtime for a connection to change state."""
        self.runtime.changed()

    def subscribed(self, event: int) -> bool:
        mask = self.events or 0
        return bool(mask & (1 << (event - 1)))

    # -- wire --

    async def _send(self, conn: int, message: bytes) -> None:
        async with self._write_lock:
            for frame in mux_frames(conn, message):
                self.writer.write(frame)
            await self.writer.drain()

    async def _read_trunk(self) -> None:
        reason = "plugin closed the connection"
        try:
            buf = bytearray()
            while True:
                data = await self.reader.read(1 << 16)
                if not data:
                    break
                buf += data
                while len(buf) >= 8:
                    conn, length = struct.unpack_from(">II", buf)
                    if len(buf) < 8 + length:
                        break
                    payload = bytes(buf[8:8 + length])
                    del buf[:8 + length]
                    self.frames_in.append((conn, length))
                    if conn in self._conns:  # frames for other conn ids are dropped (§2.1)
                        self._conns[conn].frames.put_nowait(payload)
        except OSError as exc:
            reason = f"read failed: {exc}"
        for reader in self._conns.values():
            reader.frames.put_nowait(None)
        self.close(reason)

    async def _read_replies(self) -> None:
        """Conn 1, where the runtime is the ttrpc client."""
        await self._receive(1, RESPONSE, self._on_reply, note=" (ErrProtocol)")

    async def _serve_runtime(self) -> None:
        """Conn 2, where the runtime serves the Runtime service."""
        await self._receive(2, REQUEST, self._on_request)

    async def _receive(self, conn: int, mtype: int,
                       handle: Callable[[int, int, bytes], Awaitable[None]],
                       note: str = "") -> None:
        """Hand each message read on ``conn`` to ``handle(stream, length, data)``, as both ends
        of the Go runtime read them: a message of another type, or a frame it could not read, is
        a protocol violation; EOF closes the connection."""
        try:
            while True:
                stream, got, length, data = await self._conns[conn].message()
                if got != mtype:
                    self._violation(f"message type {got} on conn {conn}{note}")
                    return
                await handle(stream, length, data)
        except FramingViolation as exc:
            self._violation(f"conn {conn}: {exc}")
        except Closed:
            self.close("EOF")

    async def _on_reply(self, stream: int, _length: int, data: bytes) -> None:
        future = self._pending.pop(stream, None)
        if future is not None and not future.done():
            future.set_result(ttrpc_pb2.Response.FromString(data))

    async def _on_request(self, stream: int, length: int, data: bytes) -> None:
        if length > TTRPC_MAX:
            self._violation(f"plugin sent a {length}-byte message")
            await self.reply(stream, code=8, message=f"message length {length} exceed "
                             f"maximum message size of {TTRPC_MAX}")
            return
        if stream % 2 == 0 or stream <= self._last_plugin_stream:
            self._violation(f"bad client stream id {stream}")
            await self.reply(stream, code=3, message="bad StreamID")
            return
        self._last_plugin_stream = stream
        request = ttrpc_pb2.Request.FromString(data)
        self._tasks.append(asyncio.create_task(serve(self, stream, request)))

    def _violation(self, what: str) -> None:
        self.runtime.violations.append(what)
        self.close(f"protocol violation: {what}")

    async def reply(self, stream: int, payload: bytes = b"", code: int = 0,
                    message: str = "") -> None:
        """Answer a request on conn 2: with ``payload``, or with the error status ``code``."""
        response = ttrpc_pb2.Response(payload=payload)
        if code:
            response = ttrpc_pb2.Response(status=ttrpc_pb2.Status(code=code, message=message))
        with contextlib.suppress(OSError):
            await self._send(2, ttrpc_message(stream, RESPONSE, response.SerializeToString()))

    # -- calling the plugin --

    async def call(self, method: str, payload: bytes, *, deadline: float | None = None,
                   metadata: Sequence[tuple[str, str]] = (),
                   service: str = PLUGIN, close_on_timeout: bool = True) -> ttrpc_pb2.Response:
        """One call on conn 1; a reply after the deadline is fatal (§6.6), unless
        ``close_on_timeout`` is false: then ``TimeoutError`` is raised and the connection
        stays open."""
        if self.closed.is_set():
            raise PluginGone(self.close_reason)
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = loop.time() + self.runtime.request_timeout
        remaining = deadline - loop.time()
        request = ttrpc_pb2.Request(
            service=service, method=method, payload=payload,
            timeout_nano=max(1, int(remaining * 1e9)),
            metadata=[ttrpc_pb2.KeyValue(key=k, value=v) for k, v in metadata])
        data = request.SerializeToString()
        limit = self.profile.send_limit
        if limit is not None and len(data) > limit:
            raise _Oversized(len(data))
        stream = self._next_stream
        self._next_stream += 2
        future: asyncio.Future[ttrpc_pb2.Response] = loop.create_future()
        self._pending[stream] = future
        try:
            await self._send(1, ttrpc_message(stream, REQUEST, data))
            return await asyncio.wait_for(future, max(remaining, 0.001))
        except TimeoutError:
            if not close_on_timeout:
                raise
            self.close(f"plugin timed out in {method}")
            raise PluginGone(f"plugin timed out in {method}") from None
        except OSError as exc:
            self.close(f"write failed: {exc}")
            raise PluginGone(str(exc)) from exc
        finally:
            self._pending.pop(stream, None)
