"""What the plugin session tests share: a recording handler, a plugin session connected to the
runtime double at a socket, and a scenario runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from cpuset_adapters.nri.handler_port import Event, RuntimeInfo
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.session import InheritedSocket, NriSession, SocketPath
from tests.builders.nri import pod
from tests.support.nri_runtime import HANG_GUARD, RuntimeDouble

DEFAULT_EVENTS = frozenset({Event.CREATE_CONTAINER, Event.UPDATE_CONTAINER,
                            Event.STOP_CONTAINER, Event.REMOVE_CONTAINER})


def run(coro: Coroutine[Any, Any, None], timeout: float = HANG_GUARD) -> None:
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

    def on_start_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        self._enter("start", container.id)

    def on_post_start_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        self._enter("post-start", container.id)

    def on_post_update_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        self._enter("post-update", container.id)

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
             run_timeout: float = HANG_GUARD, **double: Any) -> RecordingHandler:
    """Run ``body`` with a double at a socket in ``tmp_path`` and a plugin connected to it,
    for at most ``run_timeout`` seconds."""
    handler = handler or RecordingHandler()

    async def main() -> None:
        path = sock_path(tmp_path)
        async with RuntimeDouble(path, **double) as rt, \
                plugin(handler, SocketPath(str(path))) as session:
            await body(rt, handler, session)
            assert rt.violations == []
    run(main(), run_timeout)
    return handler
