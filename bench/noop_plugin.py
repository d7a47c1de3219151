"""A no-op NRI plugin, the floor the creation benchmark (``bench/creation.py``) sets nri-cpuset
beside: it connects to the runtime's NRI socket as nri-cpuset does (the same session, mux and
ttrpc code), subscribes to the same events on that runtime
(:func:`cpuset_adapters.nri.handler.events_for`), and answers each with nothing: no update at
Synchronize, no adjustment and no update at CreateContainer. So NRI's own cost of a plugin is
in the floor, and only nri-cpuset's decisions and writes are above it.

It logs JSON lines like ``nri-cpuset run`` (``registered with the runtime as ...``, then
``synchronized``), so :class:`~cpuset_lab.plugin_process.PluginProcess` waits on it alike.
A benchmark's tool, never part of the product.

Run: ``python bench/noop_plugin.py --nri-socket PATH`` (SIGTERM stops it).
"""

# The handler takes every hook's arguments (the port's shape) and uses none of them.
# ruff: noqa: ARG002

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from cpuset_adapters.nri.handler import events_for
from cpuset_adapters.nri.handler_port import Event, RuntimeInfo
from cpuset_adapters.nri.launch import Endpoint, SocketPath
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.session import NriSession
from cpuset_adapters.observability.logging import configure_logging
from cpuset_lab.plugin_process import PluginProcess

_log = logging.getLogger("nri_cpuset.noop")

NAME = "noop"
INDEX = "99"
"""nri-cpuset's default index: only one of the two is connected at a time."""


class NoopHandler:
    """:class:`~cpuset_adapters.nri.handler_port.NriHandler` that decides nothing."""

    def __init__(self) -> None:
        self.runtime: RuntimeInfo | None = None

    def subscribed_events(self) -> frozenset[Event]:
        return events_for(self.runtime)

    def on_configure(self, info: RuntimeInfo) -> None:
        self.runtime = info

    def on_synchronize(self, pods: Sequence[pb.PodSandbox],
                       containers: Sequence[pb.Container]) -> Sequence[pb.ContainerUpdate]:
        # The signal the benchmark waits on, as nri-cpuset's rebuild logs it.
        _log.info("synchronized", extra={"pods": len(pods), "containers": len(containers)})
        return []

    def on_create_container(self, pod: pb.PodSandbox, container: pb.Container,
                            ) -> tuple[pb.ContainerAdjustment | None, Sequence[pb.ContainerUpdate]]:
        return None, []

    def on_update_container(self, pod: pb.PodSandbox, container: pb.Container,
                            resources: pb.LinuxResources) -> Sequence[pb.ContainerUpdate]:
        return []

    def on_start_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        return None

    def on_post_start_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        return None

    def on_post_update_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        return None

    def on_stop_container(self, pod: pb.PodSandbox,
                          container: pb.Container) -> Sequence[pb.ContainerUpdate]:
        return []

    def on_remove_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        return None

    def on_pod_sandbox_gone(self, pod: pb.PodSandbox, *, removed: bool) -> None:
        return None

    def on_disconnect(self) -> None:
        return None


class NoopProcess(PluginProcess):
    """This plugin as a child process on ``nri_socket``, logging to ``log``."""

    def __init__(self, nri_socket: Path, log: Path) -> None:
        super().__init__(nri_socket, log)

    def command(self) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "--nri-socket",
                str(self.nri_socket)]


async def serve(endpoint: Endpoint, *, name: str = NAME, index: str = INDEX) -> None:
    """Connect, register and answer (reconnecting like nri-cpuset) until SIGTERM or
    cancellation."""
    session = NriSession(NoopHandler(), name=name, index=index)
    task = asyncio.create_task(session.run_forever(endpoint))
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nri-socket", required=True, help="the runtime's NRI socket")
    args = parser.parse_args(argv)
    configure_logging("info", "json", stream=sys.stdout)
    asyncio.run(serve(SocketPath(args.nri_socket)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
