"""Kubernetes Events for what the plugin decides (``[events]``, off by default): the recorder's
worker thread started and stopped with the daemon, the service's notices turned into events
(:class:`~cpuset_adapters.kubernetes.event_notices.EventNotices`), and the shared pool's
changes told on the node.

The shared pool changes with almost every creation and removal, so telling each would flood the
API server on a busy node, and the recorder's aggregation would not do: a series keeps its first
note, so the count would grow under a pool that no longer exists. Instead the pool is looked at
every :data:`TICK` seconds and a change is told at most once per ``events.shared_pool_interval``
seconds, saying what the pool is now and what it was when last told; what happened in between
is folded in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Final

from cpuset_adapters.config import Config
from cpuset_adapters.kubernetes.api_client import EventsApi
from cpuset_adapters.kubernetes.event_notices import EventNotices, Recorder
from cpuset_adapters.kubernetes.event_recorder import EventRecorder
from cpuset_adapters.kubernetes.placement_events import shared_pool_changed
from cpuset_adapters.observability.event_metrics import EventTotals
from cpuset_cli.daemon.kube_access import node_and_endpoint
from cpuset_core import CPUSet
from cpuset_service.placement import PlacementService

_log = logging.getLogger("nri_cpuset.events")

TICK: Final = 1.0
STOP_TIMEOUT: Final = 2.0
"""Seconds a shutdown waits for the request being sent (what is still queued is dropped)."""


class SharedPoolEvents:
    """Tells the shared pool's changes on node ``node_name``, at most one event per
    ``interval()`` seconds. The pool first seen is the baseline, not news."""

    def __init__(self, recorder: Recorder, node_name: str, *, interval: Callable[[], float],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._recorder, self._node_name = recorder, node_name
        self._interval, self._clock = interval, clock
        self._told: CPUSet | None = None
        self._told_at = float("-inf")

    @property
    def told(self) -> CPUSet | None:
        """The pool as last told (first: as first seen); ``None`` before it was seen."""
        return self._told

    def look(self, pool: CPUSet | None) -> None:
        """The pool now (``None`` while there is none to tell: not synchronized)."""
        if pool is None:
            return
        if self._told is None:
            self._told = pool
            _log.debug("shared pool first seen", extra={"shared_pool": str(pool)})
            return
        now = self._clock()
        if pool == self._told or now - self._told_at < self._interval():
            return
        self._recorder.record(shared_pool_changed(self._node_name, before=self._told,
                                                  after=pool))
        self._told, self._told_at = pool, now


class EventReporting:
    """The events' parts for one daemon: :meth:`run` is its task."""

    def __init__(self, service: PlacementService, recorder: EventRecorder,
                 pool: SharedPoolEvents) -> None:
        self._service, self._recorder, self.pool = service, recorder, pool
        self.notices = EventNotices(recorder)
        """What the service tells (attached to it by the composition root)."""

    async def run(self) -> None:
        """Send events from the recorder's thread and look at the pool, until cancelled."""
        self._recorder.start()
        try:
            while True:
                await asyncio.sleep(TICK)
                service = self._service
                self.pool.look(service.engine.shared_pool() if service.synchronized else None)
        finally:
            self._recorder.stop(STOP_TIMEOUT)

    def totals(self) -> EventTotals:
        """The counters, for metrics (read from the scraping thread)."""
        return EventTotals(counts=self._recorder.counts(), not_composed=self.notices.failures,
                           pending=self._recorder.pending())


def events_for(config: Callable[[], Config], service: PlacementService, *,
               environ: Mapping[str, str]) -> EventReporting | None:
    """The events ``[events]`` asks for, or ``None`` when off or unable to start (why is
    logged). ``config`` reads the configuration now (the pool's interval is live)."""
    settings = config()
    if not settings.events.enabled:
        return None
    found = node_and_endpoint(settings.topology_publisher, environ, feature="events",
                              log=_log)
    if found is None:
        return None
    node_name, endpoint = found
    _log.info("writing Kubernetes Events as node %s through %s", node_name, endpoint.source)
    recorder = EventRecorder(EventsApi(endpoint), instance=node_name,
                             capacity=settings.events.queue_capacity)
    pool = SharedPoolEvents(recorder, node_name,
                            interval=lambda: config().events.shared_pool_interval)
    return EventReporting(service, recorder, pool)
