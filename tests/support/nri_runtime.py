"""An in-process NRI runtime double: containerd's side of the NRI socket, written from the
protocol fact sheet (shared/notes/nri-protocol.md), not from the plugin code it tests.

It shares only the generated protobuf schema with the plugin; framing, the mux and ttrpc are
its own. Its *receiver* behaves like the Go runtime's: each mux frame is one datagram read
through ttrpc's 4096-byte ``bufio.Reader``, so a frame the Go side could not read (§2.4: larger
than the buffer it is read into) kills the connection here too and is recorded in
:attr:`RuntimeDouble.violations`, as are even or reused stream ids, a second RegisterPlugin and
a mishandled split Synchronize.

Usage::

    async with RuntimeDouble(tmp_path / "nri.sock", version="0.6.1") as rt:
        ...start the plugin against rt.socket_path...
        await rt.wait_ready()                     # registered, configured, synchronized
        resp = await rt.create_container(pod, ctr)

Versions (§0, §7): ``"0.6.1"`` is containerd 1.7.16-1.7.25 (no timeouts or NRI version in
Configure, mask up to 0x7FF, no chunking, StateChange for every other event, pre-installed
plugins never synchronized, sends messages over 4 MiB); ``"0.8.0"`` is containerd 1.7.26+ and
2.0-2.1 (timeouts, chunking, still StateChange); ``"0.12.2"`` is containerd 2.3+/HEAD (NRI
version, mask up to 0x3FFF, per-event RPCs with the code-12 fallback to StateChange, name
check). Pass ``preinstalled=True`` to hand the plugin a socketpair end (``plugin_socket``)
instead of listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import struct
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.proto import ttrpc_pb2

PLUGIN = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME = "nri.pkg.api.v1alpha1.Runtime"
BUFIO_SIZE = 4096  # ttrpc channel.go newChannel: bufio.NewReader(conn) default size
TTRPC_MAX = 4 << 20
REQUEST, RESPONSE = 1, 2


@dataclass(frozen=True)
class Profile:
    """What differs between NRI versions, as the runtime behaves (§0, §4, §7)."""

    nri: str
    runtime_version: str
    sends_timeouts: bool
    sends_nri_version: bool
    valid_events: int
    chunks_sync: bool
    per_event_rpcs: bool
    checks_name: bool
    syncs_preinstalled: bool
    send_limit: int | None  # ttrpc refuses to send more (None: 1.2.5 does not check)


PROFILES = {
    "0.6.1": Profile(
        nri="0.6.1", runtime_version="v1.7.24", sends_timeouts=False, sends_nri_version=False,
        valid_events=0x7FF, chunks_sync=False, per_event_rpcs=False, checks_name=False,
        syncs_preinstalled=False, send_limit=None),
    "0.8.0": Profile(
        nri="0.8.0", runtime_version="v2.1.4", sends_timeouts=True, sends_nri_version=False,
        valid_events=0x7FF, chunks_sync=True, per_event_rpcs=False, checks_name=False,
        syncs_preinstalled=True, send_limit=TTRPC_MAX),
    "0.12.2": Profile(
        nri="0.12.2", runtime_version="v2.4.0", sends_timeouts=True, sends_nri_version=True,
        valid_events=0x3FFF, chunks_sync=True, per_event_rpcs=True, checks_name=True,
        syncs_preinstalled=True, send_limit=TTRPC_MAX),
}

# v0.12 per-event RPCs (§4.3/§5.2): event -> (method, request carries a container)
PER_EVENT_RPC = {
    1: ("RunPodSandbox", False), 13: ("PostUpdatePodSandbox", False),
    2: ("StopPodSandbox", False), 3: ("RemovePodSandbox", False),
    5: ("PostCreateContainer", True), 6: ("StartContainer", True),
    7: ("PostStartContainer", True), 9: ("PostUpdateContainer", True),
    11: ("RemoveContainer", True),
}
_NAME = re.compile(r"[a-zA-Z0-9_.+-]+")
_INDEX = re.compile(r"[0-9][0-9]")


class CallError(Exception):
    """The plugin answered with an error status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"code {code}: {message}")
        self.code = code
        self.message = message


class PluginGone(Exception):  # noqa: N818 - reads as the event it is
    """The plugin connection is closed (or was closed because the plugin timed out)."""


class _Oversized(Exception):  # noqa: N818
    pass


class _Closed(Exception):  # noqa: N818
    pass


class _FramingViolation(Exception):  # noqa: N818
    pass


class _GoConnReader:
    """One logical connection as the Go runtime reads it: frames are datagrams, read through
    a 4096-byte bufio.Reader, by io.ReadFull."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._buf = bytearray()

    async def _frame(self, cap: int) -> bytes:
        frame = await self.frames.get()
        if frame is None:
            raise _Closed("EOF")
        if len(frame) > cap:  # mux.go conn.Read
            raise _FramingViolation(f"frame of {len(frame)} bytes read into a {cap}-byte "
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


def _frames(conn: int, message: bytes) -> list[bytes]:
    """What Go's bufio.Writer(4096) over the mux produces for one message (§2.4)."""
    pieces = [message[:BUFIO_SIZE], message[BUFIO_SIZE:]]
    return [struct.pack(">II", conn, len(p)) + p for p in pieces if p]


def _message(stream: int, mtype: int, data: bytes) -> bytes:
    return struct.pack(">IIBB", len(data), stream, mtype, 0) + data


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
    _configured: asyncio.Event = field(default_factory=asyncio.Event)
    _conns: dict[int, _GoConnReader] = field(default_factory=dict)
    _pending: dict[int, asyncio.Future[ttrpc_pb2.Response]] = field(default_factory=dict)
    _tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    _next_stream: int = 1
    _last_plugin_stream: int = 0
    _register_calls: int = 0
    _write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def profile(self) -> Profile:
        return self.runtime.profile

    def start(self) -> None:
        self._conns = {1: _GoConnReader(), 2: _GoConnReader()}
        for coro in (self._read_trunk(), self._serve_runtime(), self._read_replies(),
                     self._handshake()):
            self._tasks.append(asyncio.create_task(coro))

    async def wait_stopped(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def close(self, reason: str) -> None:
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.closed.set()
        self._notify()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PluginGone(reason))
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        self.writer.close()

    def _notify(self) -> None:
        self.runtime.changed()

    def subscribed(self, event: int) -> bool:
        mask = self.events or 0
        return bool(mask & (1 << (event - 1)))

    # -- wire --

    async def _send(self, conn: int, message: bytes) -> None:
        async with self._write_lock:
            for frame in _frames(conn, message):
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
        except _FramingViolation as exc:
            self._violation(f"conn {conn}: {exc}")
        except _Closed:
            self.close("EOF")

    async def _on_reply(self, stream: int, _length: int, data: bytes) -> None:
        future = self._pending.pop(stream, None)
        if future is not None and not future.done():
            future.set_result(ttrpc_pb2.Response.FromString(data))

    async def _on_request(self, stream: int, length: int, data: bytes) -> None:
        if length > TTRPC_MAX:
            self._violation(f"plugin sent a {length}-byte message")
            await self._reply(stream, code=8, message=f"message length {length} exceed "
                              f"maximum message size of {TTRPC_MAX}")
            return
        if stream % 2 == 0 or stream <= self._last_plugin_stream:
            self._violation(f"bad client stream id {stream}")
            await self._reply(stream, code=3, message="bad StreamID")
            return
        self._last_plugin_stream = stream
        request = ttrpc_pb2.Request.FromString(data)
        self._tasks.append(asyncio.create_task(self._runtime_method(stream, request)))

    def _violation(self, what: str) -> None:
        self.runtime.violations.append(what)
        self.close(f"protocol violation: {what}")

    async def _reply(self, stream: int, payload: bytes = b"", code: int = 0,
                     message: str = "") -> None:
        response = ttrpc_pb2.Response(payload=payload)
        if code:
            response = ttrpc_pb2.Response(status=ttrpc_pb2.Status(code=code, message=message))
        with contextlib.suppress(OSError):
            await self._send(2, _message(stream, RESPONSE, response.SerializeToString()))

    # -- the Runtime service --

    async def _runtime_method(self, stream: int, request: ttrpc_pb2.Request) -> None:
        rt = self.runtime
        if request.service != RUNTIME:
            await self._reply(stream, code=12, message=f"service {request.service}")
        elif request.method == "RegisterPlugin":
            await self._register(stream, pb.RegisterPluginRequest.FromString(request.payload))
        elif request.method == "UpdateContainers":
            update = pb.UpdateContainersRequest.FromString(request.payload)
            async with rt.nri_lock:  # containerd's NRI lock (§6.3)
                rt.update_requests.append(update)
                rt.update_arrived.set()
                error = rt.update_error
            if error is None:
                await self._reply(stream, pb.UpdateContainersResponse().SerializeToString())
            else:  # the reply object is dropped: status only (§6.3)
                await self._reply(stream, code=error[0], message=error[1])
        else:
            await self._reply(stream, code=12, message=f"method {request.method}")

    async def _register(self, stream: int, req: pb.RegisterPluginRequest) -> None:
        self._register_calls += 1
        if self._register_calls > 1:  # the runtime blocks in a 1-slot channel (§1.3)
            self.runtime.violations.append("second RegisterPlugin on one connection")
            return
        error = ""
        if not self.preinstalled:
            if not _INDEX.fullmatch(req.plugin_idx):
                error = f"invalid plugin index {req.plugin_idx!r}"
            elif not req.plugin_name or (self.profile.checks_name
                                         and not _NAME.fullmatch(req.plugin_name)):
                error = f"invalid plugin name {req.plugin_name!r}"
        if self.runtime.refuse_registration is not None:
            error = self.runtime.refuse_registration
        if error:
            await self._reply(stream, code=2, message=f"failed to register plugin: {error}")
            self.close(error)
            return
        self.name, self.index = req.plugin_name, req.plugin_idx
        self.registered.set()  # signalled before the reply is sent (§4.4)
        self._notify()
        if self.runtime.configure_before_register_reply:
            await self._configured.wait()
        await self._reply(stream)

    # -- calling the plugin --

    async def call(self, method: str, payload: bytes, *, deadline: float | None = None,
                   metadata: Sequence[tuple[str, str]] = (),
                   service: str = PLUGIN) -> ttrpc_pb2.Response:
        """One call on conn 1; a reply after the deadline is fatal (§6.6)."""
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
            await self._send(1, _message(stream, REQUEST, data))
            return await asyncio.wait_for(future, max(remaining, 0.001))
        except TimeoutError:
            self.close(f"plugin timed out in {method}")
            raise PluginGone(f"plugin timed out in {method}") from None
        except OSError as exc:
            self.close(f"write failed: {exc}")
            raise PluginGone(str(exc)) from exc
        finally:
            self._pending.pop(stream, None)

    async def _handshake(self) -> None:
        rt = self.runtime
        try:
            await asyncio.wait_for(self.registered.wait(), rt.registration_timeout)
        except TimeoutError:
            self.close("registration timeout")
            return
        try:
            await self._configure()
            if not self.preinstalled or self.profile.syncs_preinstalled:
                await self._synchronize()
        except (PluginGone, CallError) as exc:
            self.close(f"handshake failed: {exc}")
            return
        self.ready.set()
        self._notify()

    async def _configure(self) -> None:
        rt, prof = self.runtime, self.profile
        req = pb.ConfigureRequest(config=rt.config, runtime_name="containerd",
                                  runtime_version=rt.runtime_version or prof.runtime_version)
        if prof.sends_timeouts:
            req.registration_timeout = int(rt.registration_timeout * 1000)
            req.request_timeout = int(rt.request_timeout * 1000)
        if prof.sends_nri_version:
            req.NRI_version = "v" + prof.nri
        try:
            resp = await self.call("Configure", req.SerializeToString(),
                                   metadata=rt.metadata)
        finally:
            self._configured.set()
        if resp.status.code:
            raise CallError(resp.status.code, resp.status.message)
        events = pb.ConfigureResponse.FromString(resp.payload).events
        if events == 0:
            events = prof.valid_events  # 0 means every valid event (§4.5)
        if events & ~prof.valid_events:
            raise CallError(2, f"invalid plugin events: 0x{events:x}")
        self.events = events

    def _sync_chunks(self) -> list[tuple[list[pb.PodSandbox], list[pb.Container]]]:
        rt = self.runtime
        pods, ctrs = list(rt.pods), list(rt.containers)
        size = rt.sync_chunk if self.profile.chunks_sync else None
        whole = pb.SynchronizeRequest(pods=pods, containers=ctrs).ByteSize()
        if size is None and self.profile.chunks_sync and whole > TTRPC_MAX - 200:
            count = max(len(pods), len(ctrs))  # recalcObjsPerSyncMsg, roughly (§4.6)
            size = max(8, int(count * min(0.9, (TTRPC_MAX - 200) / whole)))
        if size is None:
            return [(pods, ctrs)]
        return [(pods[i:i + size], ctrs[i:i + size])
                for i in range(0, max(len(pods), len(ctrs), 1), size)]

    async def _synchronize(self) -> None:
        rt = self.runtime
        deadline = asyncio.get_running_loop().time() + rt.request_timeout  # one for all chunks
        chunks = self._sync_chunks()
        async with rt.nri_lock:
            for i, (pods, ctrs) in enumerate(chunks):
                more = i < len(chunks) - 1
                req = pb.SynchronizeRequest(pods=pods, containers=ctrs, more=more)
                resp = await self.call("Synchronize", req.SerializeToString(), deadline=deadline,
                                       metadata=rt.metadata)
                self.sync_chunks += 1
                if resp.status.code:
                    raise CallError(resp.status.code, resp.status.message)
                reply = pb.SynchronizeResponse.FromString(resp.payload)
                if more and (not reply.more or len(reply.update)):
                    rt.violations.append("plugin does not handle split sync requests")
                    raise CallError(2, "plugin does not handle split sync requests")
                if not more:
                    self.sync_updates = list(reply.update)


class RuntimeDouble:
    """containerd's NRI side for tests; see the module docstring."""

    def __init__(self, socket_path: str | Path | None = None, *, version: str = "0.12.2",
                 preinstalled: bool = False, config: str = "",
                 runtime_version: str = "", pods: Sequence[pb.PodSandbox] = (),
                 containers: Sequence[pb.Container] = (), sync_chunk: int | None = None,
                 registration_timeout: float = 5.0, request_timeout: float = 2.0,
                 configure_before_register_reply: bool = True,
                 metadata: Sequence[tuple[str, str]] = ()) -> None:
        if version not in PROFILES:
            raise ValueError(f"unknown NRI version {version!r}; one of {sorted(PROFILES)}")
        if (socket_path is None) != preinstalled:
            raise ValueError("give a socket path, or preinstalled=True")
        self.profile = PROFILES[version]
        self.socket_path = str(socket_path) if socket_path is not None else None
        self.preinstalled = preinstalled
        self.config = config
        self.runtime_version = runtime_version
        self.pods = list(pods)
        self.containers = list(containers)
        self.sync_chunk = sync_chunk
        self.registration_timeout = registration_timeout
        self.request_timeout = request_timeout
        self.configure_before_register_reply = configure_before_register_reply
        self.metadata = tuple(metadata)
        self.refuse_registration: str | None = None
        """Set to a message to answer RegisterPlugin with that error (code 2)."""
        self.update_error: tuple[int, str] | None = None
        """Set to ``(code, message)`` to fail UpdateContainers with that status."""
        self.update_requests: list[pb.UpdateContainersRequest] = []
        self.update_arrived = asyncio.Event()
        self.violations: list[str] = []
        self.connections: list[PluginConnection] = []
        self.nri_lock = asyncio.Lock()
        self.plugin_socket: socket.socket | None = None
        self._server: asyncio.Server | None = None
        self._changed = asyncio.Event()

    async def __aenter__(self) -> RuntimeDouble:
        if self.preinstalled:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            self.plugin_socket = theirs
            reader, writer = await asyncio.open_unix_connection(sock=ours)
            self._accept(reader, writer)
        else:
            assert self.socket_path is not None
            self._server = await asyncio.start_unix_server(self._accept, self.socket_path)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        for conn in self.connections:
            conn.close("runtime stopped")
        for conn in self.connections:
            await conn.wait_stopped()
        if self._server is not None:
            await self._server.wait_closed()
        if self.plugin_socket is not None and self.plugin_socket.fileno() >= 0:
            self.plugin_socket.close()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = PluginConnection(self, reader, writer, self.preinstalled)
        self.connections.append(conn)
        conn.start()
        self.changed()

    def changed(self) -> None:
        """Wake whoever waits for a connection to change state."""
        self._changed.set()

    async def _until(self, predicate: Any, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    # -- waiting --

    @property
    def plugin(self) -> PluginConnection:
        """The latest connection."""
        if not self.connections:
            raise PluginGone("no plugin connected")
        return self.connections[-1]

    async def wait_registered(self, count: int = 1, timeout: float = 3.0) -> PluginConnection:
        """Wait until ``count`` connections have had RegisterPlugin accepted."""
        await self._until(lambda: sum(c.registered.is_set() for c in self.connections) >= count,
                          timeout)
        return [c for c in self.connections if c.registered.is_set()][count - 1]

    async def wait_ready(self, count: int = 1, timeout: float = 3.0) -> PluginConnection:
        """Wait until ``count`` connections finished the handshake (events may flow)."""
        await self._until(lambda: sum(c.ready.is_set() for c in self.connections) >= count,
                          timeout)
        return [c for c in self.connections if c.ready.is_set()][count - 1]

    async def wait_closed(self, conn: PluginConnection | None = None,
                          timeout: float = 3.0) -> str:
        conn = conn or self.plugin
        async with asyncio.timeout(timeout):
            await conn.closed.wait()
        return conn.close_reason

    async def wait_update(self, count: int = 1, timeout: float = 3.0) -> pb.UpdateContainersRequest:
        """Wait until ``count`` UpdateContainers requests arrived; return the ``count``-th."""
        async with asyncio.timeout(timeout):
            while len(self.update_requests) < count:
                self.update_arrived.clear()
                await self.update_arrived.wait()
        return self.update_requests[count - 1]

    async def disconnect(self) -> None:
        """Drop the current plugin connection (as a containerd restart does)."""
        conn = self.plugin
        conn.close("runtime dropped the connection")

    # -- events --

    async def _event(self, event: int, method: str, request: Any) -> bytes | None:
        conn = self.plugin
        await asyncio.wait_for(conn.ready.wait(), 3.0)
        if not conn.subscribed(event):
            return None
        async with self.nri_lock:  # events are serialized under containerd's lock (§4.4)
            resp = await conn.call(method, request.SerializeToString(), metadata=self.metadata)
        if resp.status.code:
            raise CallError(resp.status.code, resp.status.message)
        payload: bytes = resp.payload
        return payload

    async def create_container(self, pod: pb.PodSandbox, container: pb.Container,
                               ) -> pb.CreateContainerResponse | None:
        """CreateContainer; ``None`` when the plugin is not subscribed. Raises CallError."""
        data = await self._event(4, "CreateContainer",
                                 pb.CreateContainerRequest(pod=pod, container=container))
        return None if data is None else pb.CreateContainerResponse.FromString(data)

    async def update_container(self, pod: pb.PodSandbox, container: pb.Container,
                               resources: pb.LinuxResources) -> pb.UpdateContainerResponse | None:
        data = await self._event(8, "UpdateContainer", pb.UpdateContainerRequest(
            pod=pod, container=container, linux_resources=resources))
        return None if data is None else pb.UpdateContainerResponse.FromString(data)

    async def stop_container(self, pod: pb.PodSandbox, container: pb.Container,
                             ) -> pb.StopContainerResponse | None:
        data = await self._event(10, "StopContainer",
                                 pb.StopContainerRequest(pod=pod, container=container))
        return None if data is None else pb.StopContainerResponse.FromString(data)

    async def remove_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        await self.lifecycle_event(11, pod, container)

    async def lifecycle_event(self, event: int, pod: pb.PodSandbox,
                              container: pb.Container | None = None) -> None:
        """One of the events that v0.12 sends through its own RPC (falling back to StateChange
        after a code 12) and older versions through StateChange (§4.5)."""
        conn = self.plugin
        if event in PER_EVENT_RPC and self.profile.per_event_rpcs \
                and not conn.fell_back_to_state_change:
            method, with_container = PER_EVENT_RPC[event]
            request = pb.RemoveContainerRequest(pod=pod)  # same layout: pod 1, container 2
            if with_container and container is not None:
                request.container.CopyFrom(container)
            try:
                await self._event(event, method, request)
                return
            except CallError as exc:
                if exc.code != 12:
                    raise
                conn.fell_back_to_state_change = True
        change = pb.StateChangeEvent(event=event, pod=pod)
        if container is not None:
            change.container.CopyFrom(container)
        await self._event(event, "StateChange", change)

    async def call_plugin(self, method: str, payload: bytes = b"",
                          service: str = PLUGIN) -> ttrpc_pb2.Response:
        """A raw call, subscription or not (e.g. an unknown method)."""
        conn = self.plugin
        await asyncio.wait_for(conn.ready.wait(), 3.0)
        return await conn.call(method, payload, service=service)
