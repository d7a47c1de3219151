"""The ``nri-cpuset run`` daemon: one NRI session plus the background update task."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.launch import Endpoint
from cpuset_adapters.nri.pusher import UpdatePusher
from cpuset_adapters.nri.session import NriSession

_log = logging.getLogger("nri_cpuset.daemon")


@dataclass
class Daemon:
    """Everything the running plugin is made of (built by ``bootstrap.build_daemon``)."""

    session: NriSession
    handler: CpusetNriHandler
    pusher: UpdatePusher
    endpoint: Endpoint

    async def run(self) -> None:
        """Serve until cancelled (or, for a pre-installed plugin, until the runtime closes)."""
        pushing = asyncio.create_task(self.pusher.run(self.session.update_containers),
                                      name="update-pusher")
        try:
            await self.session.run_forever(self.endpoint)
        finally:
            pushing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pushing

    async def run_until_signalled(self) -> None:
        """Run, and stop cleanly on SIGTERM or SIGINT."""
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        assert main is not None
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, main.cancel)
        try:
            await self.run()
        except asyncio.CancelledError:
            _log.info("stopping on signal")
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
