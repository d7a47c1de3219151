"""The plugin session's own UpdateContainers calls, and reconnecting: a disconnect, a runtime
not there yet, cancelling, a refused registration.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.session import (
    ConnectionLostError,
    NriSession,
    SocketPath,
    UpdateContainersError,
)
from tests.builders.nri import container
from tests.support.nri_runtime import HANG_GUARD, RuntimeDouble
from tests.unit.nri.session_harness import (
    WEB,
    RecordingHandler,
    plugin,
    run,
    scenario,
    sock_path,
    update,
)

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
    async with asyncio.timeout(HANG_GUARD):
        while len(rt.connections) < count:
            await asyncio.sleep(0.01)
    return rt.connections[count - 1]
