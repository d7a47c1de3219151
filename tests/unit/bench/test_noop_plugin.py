"""The benchmarks' no-op NRI plugin (``bench/noop_plugin.py``) over the real wire protocol
against the runtime double, on containerd 1.7's NRI (v0.6.1) and on v0.12.2: it subscribes to
what nri-cpuset subscribes to there and answers everything with nothing."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from noop_plugin import NoopProcess, serve

from cpuset_adapters.nri.handler import EVENTS, events_for
from cpuset_adapters.nri.handler_port import Event, RuntimeInfo
from cpuset_adapters.nri.launch import SocketPath
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.subscription import subscription_mask
from tests.builders.nri import container, pod
from tests.support.nri_runtime import RuntimeDouble

VERSIONS = {"0.6.1": "", "0.12.2": "v0.12.2"}
"""The double's NRI versions → what each says in Configure (v0.6.1 says nothing)."""


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_it_subscribes_like_nri_cpuset_and_answers_with_nothing(tmp_path: Path,
                                                                version: str) -> None:
    web = pod("web", qos="burstable")
    app = container("app", web, cpuset="0-1")
    socket = tmp_path / "nri.sock"

    async def main() -> None:
        async with RuntimeDouble(socket, version=version, pods=[web],
                                 containers=[app]) as runtime:
            task = asyncio.create_task(serve(SocketPath(str(socket))))
            try:
                conn = await runtime.wait_ready(timeout=10.0)
                expected = events_for(RuntimeInfo(nri_version=VERSIONS[version]))
                assert conn.events == subscription_mask(expected)
                assert (Event.POST_START_CONTAINER in expected) == (version == "0.12.2")
                assert expected >= EVENTS
                assert list(conn.sync_updates) == []
                io = pod("io", qos="guaranteed")
                new = container("io", io, cpus=1)
                created = await runtime.create_container(io, new)
                assert created == pb.CreateContainerResponse()
                assert not created.HasField("adjust")
                await runtime.lifecycle_event(Event.START_CONTAINER, io, new)
                stopped = await runtime.stop_container(io, new)
                assert stopped == pb.StopContainerResponse()
                await runtime.remove_container(io, new)
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            assert runtime.violations == []

    asyncio.run(main())


def test_as_a_process_it_says_when_it_registered_and_was_synchronized(tmp_path: Path) -> None:
    socket = tmp_path / "nri.sock"
    process = NoopProcess(socket, tmp_path / "noop.log")
    assert process.command()[:2] == [sys.executable, str(Path(process.command()[1]))]
    assert process.command()[1].endswith("bench/noop_plugin.py")

    async def main() -> None:
        async with RuntimeDouble(socket, version="0.12.2") as runtime:
            joined = asyncio.to_thread(process.next_join, process.start)
            try:
                registered, synchronized = await joined
                assert registered <= synchronized
                assert runtime.plugin.name == "noop"
            finally:
                assert await asyncio.to_thread(process.stop) == 0

    asyncio.run(main())
