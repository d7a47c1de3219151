"""Keeping the node's NodeResourceTopology object current, off the hook path: a background task
that notices decisions, coalesces them, and writes the object from a worker thread.

Every :data:`TICK` seconds it builds the object the engine's committed state describes (cheap,
and skipped while nothing it depends on changed). A change is published once it has been quiet
for :data:`SETTLE` seconds, or :data:`MAX_DELAY` seconds after it began on a busy node: within a
second, one write per burst. Nothing is published before the state was rebuilt from the
runtime (an empty ledger would announce every CPU free), nor while the runtime is away.

The API server being unreachable, slow or refusing never touches a placement: the hooks never
wait for this task, a write runs in a thread with a timeout, and a failure is logged once per
reason, counted, and retried with back-off (1 s doubling to 60 s). The object is written again
every :data:`RESYNC` seconds even when unchanged, so one deleted by hand comes back.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from cpuset_adapters.config import TopologyPublisher as TopologyPublisherSettings
from cpuset_adapters.kubernetes.api_client import ApiError, TopologyApi
from cpuset_adapters.kubernetes.node_memory import NodeMemoryError, read_node_memory
from cpuset_adapters.kubernetes.topology_object import build_topology_object
from cpuset_cli.daemon.kube_access import node_and_endpoint
from cpuset_core import Topology
from cpuset_service.placement import PlacementService

_log = logging.getLogger("nri_cpuset.topology")

TICK: Final = 0.1
SETTLE: Final = 0.2
MAX_DELAY: Final = 0.6
RESYNC: Final = 300.0
BACKOFF_FIRST: Final = 1.0
BACKOFF_MAX: Final = 60.0
MEMORY_RETRY: Final = 10.0

JsonObject = dict[str, Any]


class Writer(Protocol):
    """Writes the object (``cpuset_adapters.kubernetes.api_client.TopologyApi``); blocking."""

    def apply(self, obj: JsonObject) -> str:
        """Create or update ``obj``; return ``created`` or ``updated``; raise ``ApiError``."""
        ...


class PublishObserver(Protocol):
    """Counts the writes (``PluginMetrics``)."""

    def topology_published(self, result: str, *, current: bool) -> None: ...

    def topology_current(self, *, current: bool) -> None: ...


class TopologyPublisher:
    """Publishes ``service``'s state as the NodeResourceTopology named ``node_name``."""

    def __init__(self, service: PlacementService, writer: Writer, *, node_name: str,
                 read_memory: Callable[[], Mapping[int, int]], policy: Callable[[], str],
                 observer: PublishObserver,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._service = service
        self._writer = writer
        self._node_name = node_name
        self._read_memory = read_memory
        self._policy = policy
        self._observer = observer
        self._clock = clock
        self._memory: Mapping[int, int] | None = None
        self._memory_of: Topology | None = None
        self._memory_retry_at = 0.0
        self._built: tuple[tuple[object, ...], JsonObject] | None = None
        self._latest: JsonObject | None = None
        self._changed_at = self._dirty_since = 0.0
        self._published: JsonObject | None = None
        self._published_at = 0.0
        self._retry_at = 0.0
        self._backoff = BACKOFF_FIRST
        self._failing = ""
        self._failures = 0
        observer.topology_current(current=False)

    @property
    def published(self) -> JsonObject | None:
        """The object the API server last accepted."""
        return self._published

    async def run(self) -> None:
        """Publish until cancelled."""
        while True:
            await asyncio.sleep(TICK)
            await self.tick()

    async def tick(self) -> None:
        """One look: publish when the object is due (see the module docstring)."""
        now = self._clock()
        desired = await self._desired(now)
        if desired is None:
            return
        if desired != self._latest:
            self._latest, self._changed_at = desired, now
            if desired != self._published and self._dirty_since == 0.0:
                self._dirty_since = now
        stale = desired != self._published
        self._observer.topology_current(current=not stale)
        if now < self._retry_at:
            return
        if not stale:
            self._dirty_since = 0.0
            if now - self._published_at < RESYNC:
                return
        elif now - self._changed_at < SETTLE and now - self._dirty_since < MAX_DELAY:
            return
        await self._publish(desired)

    async def _desired(self, now: float) -> JsonObject | None:
        """The object for the committed state, or ``None`` while there is none to tell."""
        if not self._service.synchronized:
            return None
        engine = self._service.engine
        if engine.topology is not self._memory_of and now >= self._memory_retry_at:
            await self._refresh_memory(engine.topology, now)
        if self._memory is None:
            return None
        key = (engine.ledger, engine.topology, engine.settings, engine.draining, self._memory,
               self._policy())
        if self._built is None or any(a is not b and a != b
                                      for a, b in zip(key, self._built[0], strict=True)):
            self._built = key, build_topology_object(
                node_name=self._node_name, topology=engine.topology, ledger=engine.ledger,
                settings=engine.settings, draining=engine.draining, memory=self._memory,
                policy=self._policy())
        return self._built[1]

    async def _refresh_memory(self, topology: Topology, now: float) -> None:
        try:
            memory = await asyncio.get_running_loop().run_in_executor(None, self._read_memory)
        except NodeMemoryError as exc:
            self._memory_retry_at = now + MEMORY_RETRY
            self._fail_once("memory", f"cannot read the NUMA nodes' memory: {exc}")
            return
        self._memory, self._memory_of = memory, topology

    async def _publish(self, obj: JsonObject) -> None:
        try:
            result = await asyncio.get_running_loop().run_in_executor(None, self._writer.apply,
                                                                      obj)
        except ApiError as exc:
            now = self._clock()
            self._retry_at, self._backoff = now + self._backoff, min(self._backoff * 2,
                                                                     BACKOFF_MAX)
            self._failures += 1
            self._fail_once(exc.reason, exc.detail)
            self._observer.topology_published(exc.reason, current=False)
            return
        self._published, self._published_at = obj, self._clock()
        self._retry_at, self._backoff = 0.0, BACKOFF_FIRST
        current = obj == self._latest
        if current:
            self._dirty_since = 0.0
        self._observer.topology_published(result, current=current)
        self._report_success(result, obj)

    def _report_success(self, result: str, obj: JsonObject) -> None:
        zones = " ".join(f"{z['name']}={z['resources'][0]['available']}" for z in obj["zones"])
        if self._failing:
            _log.warning("NodeResourceTopology %s %s after %d failed attempt(s)",
                         self._node_name, result, self._failures)
            self._failing, self._failures = "", 0
        elif result == "created":
            _log.info("NodeResourceTopology %s created", self._node_name)
        _log.debug("NodeResourceTopology %s %s: available cpus %s", self._node_name, result,
                   zones)

    def _fail_once(self, reason: str, detail: str) -> None:
        """Log a failure when its reason differs from the last one (then at debug)."""
        if reason != self._failing:
            _log.error("NodeResourceTopology %s not published (%s): %s; placements are not "
                       "affected, retrying with back-off", self._node_name, reason, detail)
            self._failing = reason
        else:
            _log.debug("NodeResourceTopology %s still not published (%s): %s",
                       self._node_name, reason, detail)


def publisher_for(settings: TopologyPublisherSettings, service: PlacementService,
                  observer: PublishObserver, *, environ: Mapping[str, str],
                  sysfs_root: str | os.PathLike[str],
                  policy: Callable[[], str] | None = None) -> TopologyPublisher | None:
    """The publisher ``[topology_publisher]`` asks for, or ``None`` when it is off or cannot
    start (why is logged: the plugin pins containers all the same). ``policy`` reads the
    declared policy at each publish (a reload changes it); by default the section's."""
    if not settings.enabled:
        return None
    found = node_and_endpoint(settings, environ, feature="topology publisher", log=_log)
    if found is None:
        return None
    node_name, endpoint = found
    _log.info("publishing NodeResourceTopology %s through %s, declaring %s", node_name,
              endpoint.source, settings.policy)
    return TopologyPublisher(service, TopologyApi(endpoint), node_name=node_name,
                             read_memory=lambda: read_node_memory(sysfs_root),
                             policy=policy or (lambda: settings.policy), observer=observer)
