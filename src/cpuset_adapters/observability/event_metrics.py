"""The Kubernetes Events' metrics, read from the recorder at each scrape (its counters are the
one record; nothing is counted twice): ``nri_cpuset_events_total{outcome}``, failed attempts by
reason, and the events waiting to be sent."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from cpuset_adapters.kubernetes.event_recorder import RecorderCounts
from cpuset_adapters.kubernetes.reasons import EVENT_REASONS
from cpuset_adapters.observability.exposition import (
    Family,
    Registry,
    counter_family,
    gauge_family,
)

_log = logging.getLogger("nri_cpuset.metrics")

OUTCOMES: Final = ("sent", "aggregated", "dropped", "abandoned", "not_composed")
"""What became of an event: created, sent as a series update, dropped from the full queue,
abandoned (refused as invalid), or never composed (a defect caught on the hook's path)."""
FAILURES: Final = EVENT_REASONS
"""Why an attempt to send an Event failed (the API client's reasons for events)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventTotals:
    """The recorder's counters, the events not composed, and those waiting."""

    counts: RecorderCounts
    not_composed: int
    pending: int


class EventCollector:
    """Yields the events' metrics from ``read()`` at each scrape."""

    def __init__(self, read: Callable[[], EventTotals]) -> None:
        self._read = read

    def collect(self) -> Iterator[Family]:
        try:
            totals = self._read()
        except Exception:  # noqa: BLE001 - a broken read must not take the other metrics down
            _log.exception("reading the events' counters for metrics failed")
            return
        counts = totals.counts
        events = counter_family(
            "nri_cpuset_events", "Kubernetes Events recorded, by outcome.", ["outcome"])
        for outcome, value in zip(OUTCOMES, (counts.sent, counts.aggregated, counts.dropped,
                                             counts.abandoned, totals.not_composed),
                                  strict=True):
            events.add_metric([outcome], value)
        yield events
        failures = counter_family(
            "nri_cpuset_event_send_failures", "Attempts to send an Event that failed, by "
            "reason (retried with back-off, except invalid, not-found and error).",
            ["reason"])
        for reason in sorted({*FAILURES, *counts.failed}):
            failures.add_metric([reason], counts.failed.get(reason, 0))
        yield failures
        yield gauge_family("nri_cpuset_events_pending", "Events queued and not yet sent.",
                           value=totals.pending)


def register(registry: Registry, read: Callable[[], EventTotals]) -> None:
    """Expose the events' metrics in ``registry``."""
    registry.register(EventCollector(read))
