"""The plugin session's identity (name and index checks) and the pre-installed mode on an
inherited fd; the double's own checks of what a plugin sends.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from cpuset_adapters.nri.launch import InvalidPluginIdentityError
from cpuset_adapters.nri.session import InheritedSocket, NriSession, RegistrationError, SocketPath
from tests.builders.nri import container
from tests.support.nri_runtime import HANG_GUARD, PluginGone, RuntimeDouble
from tests.unit.nri.session_harness import (
    WEB,
    RecordingHandler,
    plugin,
    run,
    scenario,
    sock_path,
    update,
)

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
            await asyncio.wait_for(task, HANG_GUARD)  # returns: no reconnect for a launched plugin
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
