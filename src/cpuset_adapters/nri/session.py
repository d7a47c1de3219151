"""One NRI plugin session: registering with the runtime, serving the ``Plugin`` service for an
:class:`~cpuset_adapters.nri.handler_port.NriHandler`, calling the runtime's
``UpdateContainers``, and staying connected (fact sheet §1, §4.4, §6.3, §6.6, §9).

Serving starts before RegisterPlugin is sent, because the runtime calls Configure as soon as it
has accepted the registration, often before its reply arrives (§4.4). An external plugin
reconnects with bounded exponential backoff whenever the connection ends (containerd restarts
recreate the socket); a pre-installed plugin (an inherited fd) is never restarted by the
runtime, so its session simply ends.

This module is on the daemon's start-up path: it imports asyncio and protobuf, never grpc.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from cpuset_adapters.grpc_status import StatusCode
from cpuset_adapters.nri import translate
from cpuset_adapters.nri.deadlock import UnansweredRegistrations
from cpuset_adapters.nri.handler_port import NriHandler
from cpuset_adapters.nri.launch import (
    DEFAULT_SOCKET_PATH,
    Endpoint,
    InheritedSocket,
    InvalidPluginIdentityError,
    Launch,
    SocketPath,
    connect,
    launch_from_environ,
    validate_identity,
)
from cpuset_adapters.nri.mux import ConnectionLostError, Multiplexer
from cpuset_adapters.nri.payload import decode, encode
from cpuset_adapters.nri.plugin_service import PLUGIN_SERVICE, ConnectionState, PluginService
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.reconnect import wait_for_socket_or
from cpuset_adapters.nri.ttrpc import RequestEnvelope, RpcError
from cpuset_adapters.nri.ttrpc_server import Reply
from cpuset_core import ContainerUpdate
from cpuset_service.observer import NO_HOOK_OBSERVER, HookObserver

__all__ = [
    "DEFAULT_SOCKET_PATH",
    "PLUGIN_SERVICE",
    "RUNTIME_SERVICE",
    "ConnectionLostError",
    "Endpoint",
    "InheritedSocket",
    "InvalidPluginIdentityError",
    "Launch",
    "NriSession",
    "RegistrationError",
    "SessionEnd",
    "SocketPath",
    "UpdateContainersError",
    "connect",
    "launch_from_environ",
    "validate_identity",
]

_logger = logging.getLogger("nri_cpuset.nri")

RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime"


class RegistrationError(Exception):
    """The runtime refused RegisterPlugin, or did not answer it in time."""


class UnansweredRegistrationError(RegistrationError):
    """The runtime did not answer RegisterPlugin in time."""


class UpdateContainersError(Exception):
    """The runtime answered UpdateContainers with an error status (typically code 2, "NRI update
    of some containers failed"); it never says which updates failed (§6.3)."""

    def __init__(self, message: str, code: int = StatusCode.UNKNOWN) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """How one connection ended."""

    reason: str
    registered: bool
    synchronized: bool


@dataclass(eq=False)
class _Connection:
    mux: Multiplexer
    registered: bool = False
    state: ConnectionState = field(default_factory=ConnectionState)


class NriSession:
    """The NRI plugin ``index-name``, whose decisions come from ``handler``."""

    def __init__(self, handler: NriHandler, *, name: str, index: str,
                 registration_timeout: float = 10.0,
                 observer: HookObserver = NO_HOOK_OBSERVER) -> None:
        """Raises :class:`InvalidPluginIdentityError` for a name or index the runtime would
        refuse, before anything connects.

        ``registration_timeout`` bounds the wait for the RegisterPlugin reply (the runtime
        itself gives up after its own registration timeout, 5 s by default, and closes).
        ``observer`` is told about every runtime call served (for metrics and health).
        """
        validate_identity(name, index)
        self._handler = handler
        self._service = PluginService(handler, observer)
        self._name = name
        self._index = index
        self._registration_timeout = registration_timeout
        self._conn: _Connection | None = None
        self._unanswered = UnansweredRegistrations()

    @property
    def name(self) -> str:
        return self._name

    @property
    def index(self) -> str:
        return self._index

    @property
    def connected(self) -> bool:
        """True while registered on a live connection (:meth:`update_containers` may run)."""
        conn = self._conn
        return conn is not None and conn.registered and not conn.mux.closed

    async def update_containers(self, updates: Sequence[pb.ContainerUpdate], *,
                                timeout: float | None = None) -> None:
        """Ask the runtime to apply ``updates`` to existing containers now.

        Call it from a task of its own, never while the runtime waits for our reply to an event:
        the runtime holds its lock across events, so the call would wait for the event's
        deadline and the plugin would be disconnected (§6.3).

        Raises :class:`UpdateContainersError` for an error status; :class:`ConnectionLostError`
        when not connected or when the connection drops first; ``TimeoutError`` after
        ``timeout`` seconds; :class:`~cpuset_adapters.nri.ttrpc.MessageTooLargeError` for a
        request over 4 MiB.
        """
        conn = self._conn
        if conn is None or not conn.registered:
            raise ConnectionLostError("not connected to the runtime")
        request = pb.UpdateContainersRequest(update=updates)
        try:
            payload = await conn.mux.call(RUNTIME_SERVICE, "UpdateContainers", encode(request),
                                          timeout=timeout)
        except RpcError as exc:
            raise UpdateContainersError(exc.message, exc.code) from exc
        try:
            failed = decode(pb.UpdateContainersResponse(), payload).failed
        except RpcError:
            _logger.warning("UpdateContainers: undecodable success reply ignored")
            return
        if failed:  # never filled on the wire (§6.3); a runtime that does fill it means it
            ids = ", ".join(u.container_id for u in failed)
            raise UpdateContainersError(f"the runtime reported failed updates for {ids}")

    def quiet_for(self) -> float:
        """Seconds since the runtime's last call was answered."""
        return time.monotonic() - self._service.last_answer

    async def apply_updates(self, updates: Sequence[ContainerUpdate], *,
                            timeout: float | None = None) -> None:
        """:meth:`update_containers` for the core's updates (the service's sender). A call
        still unanswered after ``timeout`` seconds drops the connection (the session then
        reconnects and synchronizes anew) and raises ``TimeoutError``: on a runtime whose locks
        deadlock (:mod:`~cpuset_adapters.nri.deadlock`) that is what frees it."""
        try:
            await self.update_containers(translate.updates(updates), timeout=timeout)
        except TimeoutError:
            conn = self._conn
            if conn is not None:
                _logger.error("UpdateContainers unanswered after %.1f s: dropping the "
                              "connection so the runtime can go on", timeout or 0.0)
                conn.mux.close("UpdateContainers unanswered")
                self._unanswered.call_dropped()
            raise

    async def serve(self, sock: socket.socket) -> SessionEnd:
        """Run one session over the connected ``sock`` (which it takes over and closes) until
        the connection ends; then call ``handler.on_disconnect()``, whatever the reason
        (cancellation included).

        Raises :class:`RegistrationError` when the runtime refuses us.
        """
        reader, writer = await asyncio.open_unix_connection(sock=sock)
        state = ConnectionState()
        mux = Multiplexer(reader, writer, functools.partial(_serve_request, self._service, state))
        conn = _Connection(mux, state=state)
        self._conn = conn
        mux.start()
        try:
            await self._register(conn)
            reason = await mux.wait_closed()
        finally:
            if self._conn is conn:
                self._conn = None
            mux.close("session ended")
            # Before the await below: a cancellation landing there must not skip it.
            self._disconnected()
            await mux.aclose()
        if reason:
            _logger.info("runtime connection ended: %s", reason)
        return SessionEnd(reason, conn.registered, conn.state.synchronized)

    async def run_forever(self, endpoint: Endpoint, *, initial_backoff: float = 0.1,
                          max_backoff: float = 5.0) -> None:
        """Connect, register and serve; reconnect after every disconnect, waiting
        ``initial_backoff`` seconds doubled per failed attempt up to ``max_backoff`` (back to
        ``initial_backoff`` after a session that got synchronized).

        With an :class:`InheritedSocket` there is one session only, and this returns when it
        ends; it raises ``OSError`` or :class:`RegistrationError` when that session cannot
        start. Cancel the task to stop: the connection is closed and ``on_disconnect`` called.
        """
        inherited = isinstance(endpoint, InheritedSocket)
        delay = initial_backoff
        while True:
            try:
                sock = await connect(endpoint)
            except OSError as exc:
                if inherited:
                    raise
                _logger.warning("cannot connect to the NRI socket: %s; retrying in %.1f s",
                                exc, delay)
            else:
                try:
                    end = await self.serve(sock)
                except RegistrationError as exc:
                    if inherited:
                        raise
                    _logger.error("%s; retrying in %.1f s", exc, delay)
                    if isinstance(exc, UnansweredRegistrationError):
                        self._unanswered.unanswered()
                else:
                    if inherited:
                        _logger.info("a pre-installed plugin is not reconnected: exiting")
                        return
                    if end.synchronized:
                        delay = initial_backoff
                    _logger.warning("reconnecting to the runtime in %.1f s", delay)
            await wait_for_socket_or(delay, endpoint)
            delay = min(delay * 2, max_backoff)

    # -- internals --

    async def _register(self, conn: _Connection) -> None:
        request = pb.RegisterPluginRequest(plugin_name=self._name, plugin_idx=self._index)
        try:
            await conn.mux.call(RUNTIME_SERVICE, "RegisterPlugin", encode(request),
                                timeout=self._registration_timeout)
        except RpcError as exc:
            conn.mux.close(f"registration refused: {exc.message}")
            raise RegistrationError(
                f"the runtime refused plugin {self._index}-{self._name}: {exc.message}") from exc
        except TimeoutError as exc:
            if not conn.state.configured:
                conn.mux.close("no RegisterPlugin reply")
                raise UnansweredRegistrationError(
                    f"no RegisterPlugin reply within {self._registration_timeout} s") from exc
            # Configure came, so the runtime accepted us; only its reply is late.
        except ConnectionLostError:
            return  # serve() reports why
        conn.registered = True
        self._unanswered.answered()
        _logger.info("registered with the runtime as %s-%s", self._index, self._name)

    def _disconnected(self) -> None:
        try:
            self._handler.on_disconnect()
        except Exception:
            _logger.exception("handler on_disconnect failed")


async def _serve_request(service: PluginService, state: ConnectionState,
                         request: RequestEnvelope) -> Reply:
    # Handlers are synchronous: the reply is ready without yielding to the event loop.
    return service.handle(state, request)

