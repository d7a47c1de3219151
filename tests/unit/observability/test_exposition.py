"""The plugin's own Prometheus text is what prometheus-client writes for the same metrics,
byte for byte (only the ``_created`` timestamps differ: each library reads its own clock)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import prometheus_client
import pytest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

from cpuset_adapters.observability import exposition as own

CREATED = re.compile(r"^(\w+_created(?:\{[^}]*\})?) \S+$", re.MULTILINE)
BUCKETS = (0.001, 0.0025, 0.5, 1.0)
ODD_LABEL = 'a "quoted" back\\slash and a\nnewline'
ODD_HELP = "Help with a back\\slash and a\nnewline."


def masked(text: bytes) -> str:
    return CREATED.sub(r"\1 CREATED", text.decode())


class Fixed:
    """Yields the same families from either library's constructors."""

    def __init__(self, counter: Callable[..., Any], gauge: Callable[..., Any]) -> None:
        self._counter = counter
        self._gauge = gauge

    def collect(self) -> list[Any]:
        counter = self._counter("fam_events", "Counted at scrape.", labels=["outcome"])
        counter.add_metric(["sent"], 3)
        counter.add_metric([ODD_LABEL], 0)
        labelled = self._gauge("fam_containers", "By kind.", labels=["kind"])
        labelled.add_metric(["shared"], 7)
        return [counter, labelled, self._gauge("fam_pending", ODD_HELP, value=2),
                self._gauge("fam_big", "A large value.", value=12345678.0)]


def fill_reference() -> bytes:
    r = prometheus_client.CollectorRegistry()
    hist = prometheus_client.Histogram("h_seconds", "Hook time.", ["hook", "result"],
                                       buckets=BUCKETS, registry=r)
    hist.labels("Create", "ok").observe(0.002)
    hist.labels("Create", "ok").observe(0.7)
    hist.labels("Stop", "error").observe(5.0)
    plain = prometheus_client.Counter("plain", ODD_HELP, registry=r)
    plain.inc(2)
    labelled = prometheus_client.Counter("by_reason", "Reasons.", ["kind", "reason"],
                                         registry=r)
    labelled.labels("shared", "")
    labelled.labels("integer", ODD_LABEL).inc(1.5)
    prometheus_client.Counter("never_labelled", "No series yet.", ["x"], registry=r)
    r.register(Fixed(CounterMetricFamily, GaugeMetricFamily))
    return prometheus_client.generate_latest(r)


def fill_own() -> bytes:
    r = own.Registry()
    hist = own.Histogram("h_seconds", "Hook time.", ["hook", "result"], buckets=BUCKETS,
                         registry=r)
    hist.labels("Create", "ok").observe(0.002)
    hist.labels("Create", "ok").observe(0.7)
    hist.labels("Stop", "error").observe(5.0)
    plain = own.Counter("plain", ODD_HELP, registry=r)
    plain.inc(2)
    labelled = own.Counter("by_reason", "Reasons.", ["kind", "reason"], registry=r)
    labelled.labels("shared", "")
    labelled.labels("integer", ODD_LABEL).inc(1.5)
    own.Counter("never_labelled", "No series yet.", ["x"], registry=r)
    r.register(Fixed(own.counter_family, own.gauge_family))
    return r.exposition()


def test_the_text_is_prometheus_clients_byte_for_byte() -> None:
    reference = masked(fill_reference())
    assert "CREATED" in reference
    assert "+Inf" in reference
    assert r"\"quoted\"" in reference
    assert masked(fill_own()) == reference


def test_created_is_a_timestamp_of_when_the_series_appeared() -> None:
    created = [float(line.rsplit(" ", 1)[1]) for line in fill_own().decode().splitlines()
               if line.startswith("plain_created ")]
    assert len(created) == 1
    assert created[0] > 1.6e9


@pytest.mark.parametrize("value", [0.0, 1.0, 0.0005, 2.5e-07, 1.5e6, 123456789.0, math.inf,
                                   -math.inf, math.nan, -3.0])
def test_floats_are_written_as_go_writes_them(value: float) -> None:
    assert own.go_float(value) == prometheus_client.utils.floatToGoString(value)  # type: ignore[no-untyped-call]


def test_a_counter_refuses_to_go_down_and_wrong_labels() -> None:
    counter = own.Counter("c", "A counter.", ["a"], registry=own.Registry())
    with pytest.raises(ValueError, match="non-negative"):
        counter.labels("x").inc(-1)
    with pytest.raises(ValueError, match="expected labels"):
        counter.labels("x", "y")
    with pytest.raises(ValueError, match="expected labels"):
        counter.inc()  # a labelled counter has no series of its own


def test_a_histogram_counts_each_observation_in_its_first_bucket_only() -> None:
    registry = own.Registry()
    own.Histogram("h", "H.", buckets=(1.0, 2.0), registry=registry).labels().observe(1.0)
    text = registry.exposition().decode()
    assert 'h_bucket{le="1.0"} 1.0\nh_bucket{le="2.0"} 1.0\nh_bucket{le="+Inf"} 1.0\n' in text
    assert "h_count 1.0\nh_sum 1.0\n" in text


def test_a_collector_added_later_is_rendered_after_the_metrics() -> None:
    registry = own.Registry()
    own.Counter("first", "First.", registry=registry)
    registry.register(Fixed(own.counter_family, own.gauge_family))
    names = [line.split()[2] for line in registry.exposition().decode().splitlines()
             if line.startswith("# TYPE")]
    assert names[:3] == ["first_total", "first_created", "fam_events_total"]
