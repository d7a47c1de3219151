"""Containers' cgroups readied for their first write, a few at a time on the event loop.

A container's first write by the kernel fast path also clears its cgroup's balance flag (on
cgroup v1, a scheduler-domain rebuild each) and opens its ``cpuset.cpus`` to keep. Left to the
first integer creation after a resync, or after shared pods started since the last one, that
work lands on the creation's answer: 10-59 ms of hook time at 200 shared containers against
3 ms for the next creations (``bench/creation.py``'s warm-up samples, issue 45). Readied when a
resync sees the containers and when each one starts, it is done while nothing waits for it.

The queue is drained by callbacks on the running event loop, :data:`CHUNK` containers per turn,
so a hook arriving meanwhile waits for at most one chunk (a few domain rebuilds). Without a
running loop (a one-shot command) nothing is readied: the writes do it themselves as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

_log = logging.getLogger("nri_cpuset.kernel")

CHUNK = 10
"""Containers readied per turn of the event loop (a domain rebuild is 0.3-0.6 ms at 200-500
cpusets on cgroup v1)."""


class KernelReadying:
    """Queues container ids (from the hooks: no I/O) and readies them through ``ready``."""

    def __init__(self, ready: Callable[[str], None]) -> None:
        self._ready = ready
        self._queued: dict[str, None] = {}
        """Ids in the order queued (a dict: ordered, without duplicates)."""
        self._scheduled = False

    def __len__(self) -> int:
        return len(self._queued)

    def queue(self, container_ids: Iterable[str]) -> None:
        """Ready these containers soon, in the order given, after what is queued already."""
        self._queued.update(dict.fromkeys(container_ids))
        if self._queued and not self._scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop: the first writes do it
                self._queued.clear()
                return
            loop.call_soon(self._drain)
            self._scheduled = True

    def drop(self, container_id: str) -> None:
        """The container is gone: not readied (a resync's queue is dropped by the next)."""
        self._queued.pop(container_id, None)

    def clear(self) -> None:
        """Drop everything queued (a resync: what runs is queued again)."""
        self._queued.clear()

    def _drain(self) -> None:
        self._scheduled = False
        for _ in range(min(CHUNK, len(self._queued))):
            container_id = next(iter(self._queued))
            del self._queued[container_id]
            try:
                self._ready(container_id)
            except Exception:  # noqa: BLE001 - readying only saves time: never stop on it
                _log.debug("readying a container's cgroup failed", exc_info=True,
                           extra={"container": container_id})
        if self._queued:
            asyncio.get_running_loop().call_soon(self._drain)
            self._scheduled = True
