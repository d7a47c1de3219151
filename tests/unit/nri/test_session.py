"""The plugin session's protocol state machine against the runtime double: registration and
configuration, the subscription mask, chunked Synchronize, events, handler failures,
UpdateContainers, reconnecting, and the pre-installed (inherited fd) mode."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters.nri.handler_port import Event, HandlerError, RuntimeInfo
from cpuset_adapters.nri.launch import InvalidPluginIdentityError
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.session import (
    ConnectionLostError,
    InheritedSocket,
    NriSession,
    RegistrationError,
    SocketPath,
    UpdateContainersError,
)
from cpuset_adapters.nri.subscription import subscription_mask
from tests.builders.nri import container, pod
from tests.support.nri_runtime import CallError, PluginGone, RuntimeDouble

DEFAULT_EVENTS = frozenset({Event.CREATE_CONTAINER, Event.UPDATE_CONTAINER,
                            Event.STOP_CONTAINER, Event.REMOVE_CONTAINER})


def run(coro: Coroutine[Any, Any, None], timeout: float = 5.0) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(timeout):
            await coro
    asyncio.run(bounded())


WEB = pod("web")
"""The pod of every container these tests create (id ``sb-web``)."""


def update(cid: str, cpus: str) -> pb.ContainerUpdate:
    u = pb.ContainerUpdate(container_id=cid)
    u.linux.resources.cpu.cpus = cpus
    return u


class RecordingHandler:
    """An NriHandler that records every call and answers from simple settings."""

    def __init__(self, events: frozenset[Event] = DEFAULT_EVENTS) -> None:
        self.events = events
        self.calls: list[tuple[Any, ...]] = []
        self.infos: list[RuntimeInfo] = []
        self.sync_updates: list[pb.ContainerUpdate] = []
        self.create_updates: list[pb.ContainerUpdate] = []
        self.fail: dict[str, BaseException] = {}
        self.delay: dict[str, float] = {}
        self.session: NriSession | None = None
        self.connected_at_configure: list[bool] = []
        self.disconnects = 0

    def _enter(self, name: str, *args: Any) -> None:
        self.calls.append((name, *args))
        if name in self.delay:
            time.sleep(self.delay[name])  # a handler that blocks the loop, as a slow one would
        if name in self.fail:
            raise self.fail[name]

    def subscribed_events(self) -> frozenset[Event]:
        return self.events

    def on_configure(self, info: RuntimeInfo) -> None:
        self.infos.append(info)
        if self.session is not None:
            self.connected_at_configure.append(self.session.connected)
        self._enter("configure")

    def on_synchronize(self, pods: Sequence[pb.PodSandbox],
                       containers: Sequence[pb.Container]) -> Sequence[pb.ContainerUpdate]:
        self._enter("synchronize", [p.id for p in pods], [c.id for c in containers])
        return self.sync_updates

    def on_create_container(self, pod: pb.PodSandbox, container: pb.Container,
                            ) -> tuple[pb.ContainerAdjustment | None, Sequence[pb.ContainerUpdate]]:
        self._enter("create", pod.id, container.id)
        adjust = pb.ContainerAdjustment()
        adjust.linux.resources.cpu.cpus = "2-3"
        adjust.linux.resources.cpu.mems = "0"
        return adjust, self.create_updates

    def on_update_container(self, pod: pb.PodSandbox, container: pb.Container,
                            resources: pb.LinuxResources) -> Sequence[pb.ContainerUpdate]:
        self._enter("update", container.id, resources.cpu.cpus)
        return [update(container.id, "2-3")]

    def on_stop_container(self, pod: pb.PodSandbox,
                          container: pb.Container) -> Sequence[pb.ContainerUpdate]:
        self._enter("stop", container.id)
        return [update("other", "0-3")]

    def on_remove_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        self._enter("remove", container.id)

    def on_pod_sandbox_gone(self, pod: pb.PodSandbox, *, removed: bool) -> None:
        self._enter("pod-removed" if removed else "pod-stopped", pod.id)

    def on_disconnect(self) -> None:
        self.disconnects += 1
        self.calls.append(("disconnect",))

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


@contextlib.asynccontextmanager
async def plugin(handler: RecordingHandler, endpoint: SocketPath | InheritedSocket,
                 name: str = "cpuset", index: str = "50") -> AsyncIterator[NriSession]:
    session = NriSession(handler, name=name, index=index)
    handler.session = session
    task = asyncio.create_task(session.run_forever(endpoint, initial_backoff=0.02,
                                                   max_backoff=0.1))
    try:
        yield session
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def sock_path(tmp_path: Path) -> Path:
    return tmp_path / "nri.sock"


Scenario = Callable[[RuntimeDouble, RecordingHandler, NriSession], Coroutine[Any, Any, None]]


def scenario(tmp_path: Path, body: Scenario, *, handler: RecordingHandler | None = None,
             **double: Any) -> RecordingHandler:
    """Run ``body`` with a double at a socket in ``tmp_path`` and a plugin connected to it."""
    handler = handler or RecordingHandler()

    async def main() -> None:
        path = sock_path(tmp_path)
        async with RuntimeDouble(path, **double) as rt, \
                plugin(handler, SocketPath(str(path))) as session:
            await body(rt, handler, session)
            assert rt.violations == []
    run(main())
    return handler


# -- registration and configuration ----------------------------------------------------------


@pytest.mark.parametrize(("version", "nri", "timeouts"), [
    ("0.6.1", "", (0, 0)), ("0.8.0", "", (5000, 2000)), ("0.12.2", "v0.12.2", (5000, 2000))])
def test_registers_and_is_configured_by_every_runtime_version(
        tmp_path: Path, version: str, nri: str, timeouts: tuple[int, int]) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        assert (conn.name, conn.index) == ("cpuset", "50")
        assert session.connected
        [info] = handler.infos
        assert info.runtime_name == "containerd"
        assert info.nri_version == nri
        assert (info.registration_timeout_ms, info.request_timeout_ms) == timeouts
        assert info.config == "policy: strict"

    handler = scenario(tmp_path, body, version=version, config="policy: strict")
    assert handler.names() == ["configure", "synchronize", "disconnect"]


def test_configure_is_served_before_the_register_reply_arrives(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        # the double withholds the RegisterPlugin reply until Configure has been answered
        assert handler.connected_at_configure == [False]
        assert session.connected

    scenario(tmp_path, body, configure_before_register_reply=True)


def test_the_mask_is_exactly_the_handlers_events(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        # CREATE 4 -> bit 3, UPDATE 8 -> bit 7, STOP 10 -> bit 9, REMOVE 11 -> bit 10
        assert conn.events == 0x8 | 0x80 | 0x200 | 0x400
        # not subscribed: the runtime never calls StartContainer
        await rt.lifecycle_event(Event.START_CONTAINER, WEB, container("c", WEB))
        assert "start" not in handler.names()

    scenario(tmp_path, body)


def test_subscription_mask_encodes_event_e_as_bit_e_minus_1() -> None:
    assert subscription_mask({Event.CREATE_CONTAINER, Event.STOP_CONTAINER,
                              Event.REMOVE_CONTAINER}) == 0x608
    assert subscription_mask({Event.RUN_POD_SANDBOX}) == 1
    with pytest.raises(ValueError, match="every event"):
        subscription_mask(set())
    with pytest.raises(ValueError, match="VALIDATE_CONTAINER_ADJUSTMENT"):
        subscription_mask({Event.CREATE_CONTAINER, Event.VALIDATE_CONTAINER_ADJUSTMENT})


@pytest.mark.parametrize("events", [frozenset(), frozenset({Event.UPDATE_POD_SANDBOX})])
def test_an_empty_or_unsupported_subscription_is_refused_not_sent_as_all(
        tmp_path: Path, events: frozenset[Event]) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_registered()
        await rt.wait_closed(conn)  # the plugin refuses Configure and hangs up
        assert not conn.ready.is_set()
        assert conn.events is None  # never subscribed to anything, in particular not to "all"

    scenario(tmp_path, body, handler=RecordingHandler(events))


def test_on_configure_refusing_drops_the_connection(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.fail["configure"] = HandlerError("bad config")

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_registered()
        await rt.wait_closed(conn)
        assert not conn.ready.is_set()

    scenario(tmp_path, body, handler=handler)


# -- synchronize -----------------------------------------------------------------------------


def test_chunked_synchronize_reaches_the_handler_once_with_everything(tmp_path: Path) -> None:
    pods = [pod(f"p{i}") for i in range(10)]
    containers = [container(f"c{i}", p) for i, p in enumerate(pods)]
    handler = RecordingHandler()
    handler.sync_updates = [update("c1", "4-5")]

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        assert conn.sync_chunks == 4  # 3 + 3 + 3 + 1 objects of each kind
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in conn.sync_updates] == [
            ("c1", "4-5")]

    scenario(tmp_path, body, handler=handler, version="0.12.2", pods=pods,
             containers=containers, sync_chunk=3)
    [sync] = [c for c in handler.calls if c[0] == "synchronize"]
    assert sync == ("synchronize", [p.id for p in pods], [c.id for c in containers])


def test_v0_6_1_sends_one_synchronize_even_over_4_mib(tmp_path: Path) -> None:
    big = "x" * 10_000
    containers = [pb.Container(id=f"c{i}", annotations={"blob": big}) for i in range(500)]

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        assert conn.sync_chunks == 1

    handler = scenario(tmp_path, body, version="0.6.1", containers=containers, sync_chunk=3)
    [sync] = [c for c in handler.calls if c[0] == "synchronize"]
    assert len(sync[2]) == 500


def test_a_failing_synchronize_drops_the_connection_and_syncs_again(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.fail["synchronize"] = HandlerError("cannot rebuild")

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_registered(count=2)
        del handler.fail["synchronize"]
        await rt.wait_ready()
        assert not rt.connections[0].ready.is_set()

    scenario(tmp_path, body, handler=handler, version="0.6.1")


# -- events ----------------------------------------------------------------------------------


def test_create_container_returns_the_adjustment_and_updates(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.create_updates = [update("older", "0-1")]

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        resp = await rt.create_container(WEB, container("new", WEB))
        assert resp is not None
        assert resp.adjust.linux.resources.cpu.cpus == "2-3"
        assert resp.adjust.linux.resources.cpu.mems == "0"
        assert [u.container_id for u in resp.update] == ["older"]

    scenario(tmp_path, body, handler=handler)
    assert ("create", "sb-web", "id-new-0123456789") in handler.calls


def test_a_handler_error_fails_the_creation_and_the_session_goes_on(tmp_path: Path) -> None:
    handler = RecordingHandler()

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        handler.fail["create"] = HandlerError("not enough CPUs for default/web/app")
        with pytest.raises(CallError) as caught:
            await rt.create_container(WEB, container("a", WEB))
        assert (caught.value.code, caught.value.message) == (
            2, "not enough CPUs for default/web/app")
        handler.fail["create"] = ZeroDivisionError("bug")
        with pytest.raises(CallError) as caught:
            await rt.create_container(WEB, container("b", WEB))
        assert caught.value.code == 13
        del handler.fail["create"]
        assert await rt.create_container(WEB, container("c", WEB)) is not None
        assert len(rt.connections) == 1

    scenario(tmp_path, body, handler=handler)


def test_update_container_passes_the_requested_resources(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        resources = pb.LinuxResources()
        resources.cpu.cpus = "0-7"
        resources.cpu.quota.SetInParent()  # a wrapper holding 0, as containerd sends it
        resp = await rt.update_container(WEB, container("a", WEB), resources)
        assert resp is not None
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in resp.update] == [
            ("id-a-0123456789", "2-3")]
        handler.fail["update"] = HandlerError("no")
        with pytest.raises(CallError, match="no"):
            await rt.update_container(WEB, container("a", WEB), resources)

    handler = scenario(tmp_path, body)
    assert ("update", "id-a-0123456789", "0-7") in handler.calls


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_stop_and_remove_are_delivered_and_always_answered_ok(tmp_path: Path,
                                                              version: str) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        resp = await rt.stop_container(WEB, container("a", WEB))
        assert resp is not None
        assert [u.container_id for u in resp.update] == ["other"]
        await rt.remove_container(WEB, container("a", WEB))
        handler.fail["stop"] = HandlerError("boom")
        handler.fail["remove"] = RuntimeError("bug")
        resp = await rt.stop_container(WEB, container("b", WEB))  # no CallError: answered OK
        assert resp is not None
        assert list(resp.update) == []
        await rt.remove_container(WEB, container("b", WEB))
        # v0.12 used RemoveContainer itself; it never had to fall back to StateChange
        assert not conn.fell_back_to_state_change

    handler = scenario(tmp_path, body, version=version)
    assert [c for c in handler.calls if c[0] in ("stop", "remove")] == [
        ("stop", "id-a-0123456789"), ("remove", "id-a-0123456789"),
        ("stop", "id-b-0123456789"), ("remove", "id-b-0123456789")]


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_other_subscribed_lifecycle_events_are_acknowledged(tmp_path: Path, version: str) -> None:
    events = DEFAULT_EVENTS | {Event.RUN_POD_SANDBOX, Event.START_CONTAINER,
                               Event.POST_START_CONTAINER}

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        await rt.lifecycle_event(Event.RUN_POD_SANDBOX, WEB)
        await rt.lifecycle_event(Event.START_CONTAINER, WEB, container("a", WEB))
        await rt.lifecycle_event(Event.POST_START_CONTAINER, WEB, container("a", WEB))
        assert not conn.fell_back_to_state_change

    handler = scenario(tmp_path, body, handler=RecordingHandler(events), version=version)
    assert handler.names() == ["configure", "synchronize", "disconnect"]


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_pod_sandbox_stop_and_removal_reach_the_handler_and_errors_are_answered_ok(
        tmp_path: Path, version: str) -> None:
    events = DEFAULT_EVENTS | {Event.STOP_POD_SANDBOX, Event.REMOVE_POD_SANDBOX}
    handler = RecordingHandler(events)
    handler.fail["pod-removed"] = HandlerError("boom")

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        await rt.lifecycle_event(Event.STOP_POD_SANDBOX, pod("p"))
        await rt.lifecycle_event(Event.REMOVE_POD_SANDBOX, pod("p"))
        assert not conn.fell_back_to_state_change
        assert await rt.create_container(WEB, container("x", WEB)) is not None  # still served

    scenario(tmp_path, body, handler=handler, version=version)
    assert [c for c in handler.calls if c[0].startswith("pod-")] == [
        ("pod-stopped", "sb-p"), ("pod-removed", "sb-p")]


def test_unknown_methods_and_services_get_unimplemented(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        resp = await rt.call_plugin("ValidateContainerAdjustment")
        assert (resp.status.code, resp.status.message) == (12, "method ValidateContainerAdjustment")
        resp = await rt.call_plugin("Configure", service="nri.pkg.api.v1alpha1.Other")
        assert (resp.status.code, resp.status.message) == (12, "service nri.pkg.api.v1alpha1.Other")
        # a garbage payload for a known method is an invalid argument, not a dead session
        resp = await rt.call_plugin("CreateContainer", b"\x0a\x05ab")
        assert resp.status.code == 3
        assert await rt.create_container(WEB, container("x", WEB)) is not None

    scenario(tmp_path, body)


def test_trace_metadata_from_the_runtime_is_ignored(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        assert await rt.create_container(WEB, container("x", WEB)) is not None

    scenario(tmp_path, body, metadata=[("traceparent", "00-0af7651916cd43dd-b7ad6b71-01")])


def test_a_big_reply_is_framed_so_the_go_reader_accepts_it(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.create_updates = [update(f"container-{i:05d}", "0-63") for i in range(2000)]

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        resp = await rt.create_container(WEB, container("new", WEB))
        assert resp is not None
        assert len(resp.update) == 2000
        assert (1, 4096) in conn.frames_in  # the first frame of the big reply

    scenario(tmp_path, body, handler=handler)  # rt.violations == [] is checked there


def test_slow_handlers_are_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    handler = RecordingHandler()
    handler.delay["create"] = 0.15  # 15 % of a 1 s request timeout

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        await rt.create_container(WEB, container("x", WEB))

    with caplog.at_level(logging.WARNING, logger="nri_cpuset.nri"):
        scenario(tmp_path, body, handler=handler, request_timeout=1.0)
    [slow] = [r for r in caplog.records if "slow handler" in r.getMessage()]
    assert slow.name == "nri_cpuset.nri"
    assert "on_create_container" in slow.getMessage()
    assert "1000 ms" in slow.getMessage()


def test_shutdown_is_answered_then_the_connection_ends(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        resp = await rt.call_plugin("Shutdown")
        assert resp.status.code == 0
        await rt.wait_closed(conn)
        await rt.wait_ready(count=2)  # an external plugin comes back

    scenario(tmp_path, body)


# -- UpdateContainers ------------------------------------------------------------------------


def test_update_containers_success_and_failure(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        await session.update_containers([update("a", "1"), update("b", "2-3")])
        request = await rt.wait_update()
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in request.update] == [
            ("a", "1"), ("b", "2-3")]
        rt.update_error = (2, "NRI update of some containers failed")
        with pytest.raises(UpdateContainersError) as caught:
            await session.update_containers([update("a", "4")])
        assert (caught.value.code, caught.value.message) == (
            2, "NRI update of some containers failed")
        assert session.connected  # an error status is not a disconnect

    scenario(tmp_path, body)


def test_events_are_served_while_our_own_update_call_waits_for_the_runtime(
        tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        conn = await rt.wait_ready()
        async with rt.nri_lock:  # containerd is busy: UpdateContainers waits for its lock
            pending = asyncio.create_task(session.update_containers([update("a", "1")]))
            await asyncio.sleep(0.05)
            assert not pending.done()
            request = pb.CreateContainerRequest(pod=WEB, container=container("b", WEB))
            reply = await conn.call("CreateContainer", request.SerializeToString())
            assert reply.status.code == 0
        await pending
        assert len(rt.update_requests) == 1

    scenario(tmp_path, body)


def test_update_containers_without_a_connection_raises_connection_lost() -> None:
    session = NriSession(RecordingHandler(), name="cpuset", index="50")

    async def main() -> None:
        with pytest.raises(ConnectionLostError, match="not connected"):
            await session.update_containers([update("a", "1")])
    run(main())


# -- reconnecting ----------------------------------------------------------------------------


def test_a_disconnect_calls_on_disconnect_and_the_plugin_registers_again(tmp_path: Path) -> None:
    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        await rt.disconnect()
        second = await rt.wait_ready(count=2)
        assert (second.name, second.index) == ("cpuset", "50")
        assert handler.disconnects == 1
        assert await rt.create_container(WEB, container("x", WEB)) is not None
        await session.update_containers([update("x", "1")])

    handler = scenario(tmp_path, body)
    assert handler.names()[:5] == ["configure", "synchronize", "disconnect", "configure",
                                   "synchronize"]


def test_the_plugin_waits_for_a_runtime_that_is_not_there_yet(tmp_path: Path) -> None:
    handler = RecordingHandler()
    path = sock_path(tmp_path)

    async def main() -> None:
        async with plugin(handler, SocketPath(str(path))):
            await asyncio.sleep(0.15)  # a few failed attempts (0.02 s doubling)
            async with RuntimeDouble(path) as rt:
                await rt.wait_ready()
        assert handler.names() == ["configure", "synchronize", "disconnect"]
    run(main())


def test_cancelling_closes_the_connection_and_calls_on_disconnect(tmp_path: Path) -> None:
    handler = RecordingHandler()
    path = sock_path(tmp_path)

    async def main() -> None:
        async with RuntimeDouble(path) as rt:
            async with plugin(handler, SocketPath(str(path))):
                conn = await rt.wait_ready()
            assert await rt.wait_closed(conn) == "plugin closed the connection"
            assert handler.disconnects == 1
            await asyncio.sleep(0.05)
            assert len(rt.connections) == 1  # no reconnect after cancellation
    run(main())


def test_a_refused_registration_is_retried(tmp_path: Path) -> None:
    handler = RecordingHandler()
    path = sock_path(tmp_path)

    async def main() -> None:
        async with RuntimeDouble(path) as rt:
            rt.refuse_registration = "plugin 50-cpuset already registered"
            async with plugin(handler, SocketPath(str(path))):
                await rt.wait_closed(await _connection(rt, 2))
            assert not any(c.registered.is_set() for c in rt.connections)
    run(main())
    assert handler.disconnects >= 2
    assert "configure" not in handler.names()


async def _connection(rt: RuntimeDouble, count: int) -> Any:
    async with asyncio.timeout(2.0):
        while len(rt.connections) < count:
            await asyncio.sleep(0.01)
    return rt.connections[count - 1]


# -- identity --------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "index"), [
    ("cpuset", "1"), ("cpuset", "100"), ("cpuset", "1a"), ("cpuset", "\u0661\u0662"),
    ("cpuset", "10\n"), ("", "10"), ("cpu set", "10"), ("cpu/set", "10"), ("cpuset\n", "10"),
    ("Ünicode", "10")])
def test_an_invalid_name_or_index_is_refused_before_connecting(tmp_path: Path, name: str,
                                                                index: str) -> None:
    async def main() -> None:
        async with RuntimeDouble(sock_path(tmp_path)) as rt:
            with pytest.raises(InvalidPluginIdentityError):
                NriSession(RecordingHandler(), name=name, index=index)
            await asyncio.sleep(0.02)
            assert rt.connections == []
    run(main())


def test_valid_names_use_the_whole_allowed_alphabet() -> None:
    NriSession(RecordingHandler(), name="aZ09_.+-", index="00")
    NriSession(RecordingHandler(), name="x", index="99")


# -- pre-installed (inherited fd) ------------------------------------------------------------


@pytest.mark.parametrize(("version", "synced"), [("0.6.1", False), ("0.12.2", True)])
def test_a_preinstalled_plugin_runs_on_the_inherited_socket_and_exits_with_it(
        version: str, synced: bool) -> None:
    handler = RecordingHandler()

    async def main() -> None:
        async with RuntimeDouble(version=version, preinstalled=True) as rt:
            assert rt.plugin_socket is not None
            fd = rt.plugin_socket.detach()
            session = NriSession(handler, name="ignored-for-preinstalled", index="10")
            task = asyncio.create_task(session.run_forever(InheritedSocket(fd)))
            conn = await rt.wait_ready()
            assert (conn.sync_chunks > 0) == synced
            assert await rt.create_container(WEB, container("x", WEB)) is not None
            await rt.disconnect()
            await asyncio.wait_for(task, 2.0)  # returns: no reconnect for a launched plugin
            assert len(rt.connections) == 1
    run(main())
    assert handler.disconnects == 1
    assert ("synchronize" in handler.names()) == synced


def test_an_inherited_fd_that_is_not_a_stream_socket_is_refused() -> None:
    async def main() -> None:
        dgram_a, dgram_b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            session = NriSession(RecordingHandler(), name="cpuset", index="10")
            with pytest.raises(OSError, match="not a unix stream socket"):
                await session.run_forever(InheritedSocket(dgram_a.fileno()))
            assert dgram_a.fileno() >= 0  # left open: not ours
        finally:
            dgram_a.close()
            dgram_b.close()
    run(main())


def test_a_preinstalled_plugin_refused_at_registration_raises() -> None:
    async def main() -> None:
        async with RuntimeDouble(preinstalled=True) as rt:
            rt.refuse_registration = "nope"
            assert rt.plugin_socket is not None
            session = NriSession(RecordingHandler(), name="cpuset", index="10")
            with pytest.raises(RegistrationError, match="nope"):
                await session.run_forever(InheritedSocket(rt.plugin_socket.detach()))
    run(main())


def test_a_plugin_gone_is_reported_by_the_double(tmp_path: Path) -> None:
    handler = RecordingHandler()
    handler.delay["create"] = 0.2

    async def body(rt: RuntimeDouble, handler: RecordingHandler, session: NriSession) -> None:
        await rt.wait_ready()
        with pytest.raises(PluginGone, match="timed out"):
            await rt.create_container(WEB, container("slow", WEB))
        await rt.wait_ready(count=2)  # the plugin reconnects after being dropped

    scenario(tmp_path, body, handler=handler, request_timeout=0.1)


def test_the_double_rejects_framing_the_go_reader_cannot_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The framing tests above mean something: one frame per message, as a naive plugin would
    send, kills the connection on a reply over 4096 bytes (ENOMEM in the Go runtime)."""
    from cpuset_adapters.nri import mux, mux_frames

    # The multiplexer's own name for the framing function is the one to replace.
    monkeypatch.setattr(mux, "frame_message", lambda conn, message: [
        mux_frames.encode_frame(conn, message)])
    handler = RecordingHandler()
    handler.create_updates = [update(f"container-{i:05d}", "0-63") for i in range(200)]
    path = sock_path(tmp_path)

    async def main() -> None:
        async with RuntimeDouble(path) as rt, plugin(handler, SocketPath(str(path))):
            await rt.wait_ready()
            with pytest.raises(PluginGone):
                await rt.create_container(WEB, container("new", WEB))
            [violation] = rt.violations
            assert violation.endswith("read into a 4096-byte buffer: cannot allocate memory")
    run(main())
