"""Watching the kernel's online CPU list, off the hook path.

CPU hotplug raises no event a plugin can subscribe to through NRI, and the handlers must do no
I/O (they answer within the runtime's request timeout). So a background task polls
``<sysfs>/devices/system/cpu/online`` (one small read every couple of seconds, in a worker
thread) and, when it differs from the online set the engine decides with, reads the whole
topology afresh through the ``TopologySource`` port and hands it over.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from cpuset_core import CpuListSyntaxError, CPUSet, Topology, TopologyError, TopologySource

_log = logging.getLogger("nri_cpuset.hotplug")

DEFAULT_INTERVAL = 2.0
"""Seconds between two reads of the online list."""


class OnlineCpuWatcher:
    """Polls the online CPU list and reports a changed topology."""

    def __init__(self, online_path: str | Path, source: TopologySource, *,
                 interval: float = DEFAULT_INTERVAL) -> None:
        if interval <= 0:
            raise ValueError(f"the polling interval must be positive, got {interval}")
        self._online_path = Path(online_path)
        self._source = source
        self._interval = interval
        self._last_error = ""

    @property
    def online_path(self) -> Path:
        return self._online_path

    def read_online(self) -> CPUSet:
        """The kernel's online CPUs now (blocking; raises ``OSError`` or
        :class:`CpuListSyntaxError`)."""
        return CPUSet.parse(self._online_path.read_text(encoding="ascii"))

    async def changed(self, current: CPUSet) -> Topology | None:
        """One poll: the new topology when the online CPUs differ from ``current``, else
        ``None``. Unreadable files are logged (once per distinct error) and count as no change:
        a torn read during a hotplug is retried at the next poll."""
        loop = asyncio.get_running_loop()
        try:
            online = await loop.run_in_executor(None, self.read_online)
            if online == current:
                self._last_error = ""
                return None
            topology = await loop.run_in_executor(None, self._source.read_topology)
        except (OSError, CpuListSyntaxError, TopologyError) as exc:
            self._warn_once(f"cannot read the CPU topology: {exc}; trying again")
            return None
        self._last_error = ""
        return None if topology.online == current else topology

    async def run(self, current: Callable[[], CPUSet],
                  on_change: Callable[[Topology], Awaitable[None]]) -> None:
        """Poll until cancelled; ``current`` gives the online CPUs the engine decides with,
        ``on_change`` gets each new topology (and must make ``current`` return its online set,
        or the change is reported again at the next poll)."""
        while True:
            await asyncio.sleep(self._interval)
            topology = await self.changed(current())
            if topology is not None:
                _log.warning("online CPUs changed: %s -> %s", current(), topology.online)
                await on_change(topology)

    def _warn_once(self, message: str) -> None:
        if message != self._last_error:
            _log.warning("%s", message)
            self._last_error = message
