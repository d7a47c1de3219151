"""Prometheus metrics and their text exposition (format 0.0.4), without prometheus-client.

The plugin needs counters and histograms with labels, gauges read at scrape time and one
text page; prometheus-client brought 3.3 MiB of resident imports for it (``http.server``,
``urllib``, ``wsgiref``, and ``ssl`` at import time: decision 56). The page is byte for byte
what prometheus-client 0.26's ``generate_latest`` writes for the same metrics (family order,
``_total`` and ``_created`` series, labels sorted by name, Go's float format, escaping):
``tests/unit/observability/test_exposition.py`` checks it against that library.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

Labels = tuple[tuple[str, str], ...]
Sample = tuple[str, Labels, float]
"""A sample's name suffix (``_total``, ``_bucket``, ``_created``...), labels and value."""


class Family:
    """One metric family as a scrape shows it: its samples, read at that moment."""

    def __init__(self, name: str, documentation: str, kind: str,
                 labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self.documentation = documentation
        self.kind = kind
        self.labelnames = tuple(labelnames)
        self.samples: list[Sample] = []

    def add_metric(self, labels: Sequence[str], value: float) -> None:
        """One series of the family (a counter's ``_total``, a gauge's value)."""
        suffix = "_total" if self.kind == "counter" else ""
        self.samples.append((suffix, tuple(zip(self.labelnames, labels, strict=True)),
                             float(value)))


def counter_family(name: str, documentation: str, labels: Sequence[str]) -> Family:
    return Family(name, documentation, "counter", labels)


def gauge_family(name: str, documentation: str, value: float | None = None,
                 labels: Sequence[str] = ()) -> Family:
    """A gauge; with ``value``, its one unlabelled series."""
    family = Family(name, documentation, "gauge", labels)
    if value is not None:
        family.add_metric((), value)
    return family


class Collector(Protocol):
    def collect(self) -> Iterable[Family]: ...


class Registry:
    """Collectors in the order they registered; :meth:`exposition` renders them all."""

    def __init__(self) -> None:
        self._collectors: list[Collector] = []

    def register(self, collector: Collector) -> None:
        self._collectors.append(collector)

    def collect(self) -> Iterator[Family]:
        for collector in list(self._collectors):
            yield from collector.collect()

    def exposition(self) -> bytes:
        """The text format of every family, as ``/metrics`` serves it."""
        return "".join(_render(family) for family in self.collect()).encode()


class _Series:
    """One labelled series of a counter or histogram; its family's lock guards it."""

    def __init__(self, lock: threading.Lock, buckets: tuple[float, ...] = ()) -> None:
        self._lock = lock
        self.created = time.time()
        self.value = 0.0
        self.buckets = buckets
        self.counts = [0.0] * len(buckets)

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        with self._lock:
            self.value += amount

    def observe(self, amount: float) -> None:
        """A histogram's observation: its bucket counts one more, its sum grows."""
        with self._lock:
            self.value += amount
            for i, bound in enumerate(self.buckets):
                if amount <= bound:
                    self.counts[i] += 1
                    break


class _Metric:
    """A counter or histogram with a series per label values, registered at creation."""

    kind = ""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (), *,
                 registry: Registry, buckets: Sequence[float] = ()) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        bounds = tuple(buckets)
        self._buckets = (*bounds, math.inf) if bounds and bounds[-1] != math.inf else bounds
        self._lock = threading.Lock()
        self._series: dict[tuple[str, ...], _Series] = {}
        if not self._labelnames:
            self.labels()
        registry.register(self)

    def labels(self, *values: str) -> _Series:
        """The series for these label values (created at zero on first use)."""
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self._name}: expected labels {self._labelnames}, got {values}")
        with self._lock:
            series = self._series.get(values)
            if series is None:
                series = self._series[values] = _Series(self._lock, self._buckets)
            return series

    def collect(self) -> Iterator[Family]:
        family = Family(self._name, self._documentation, self.kind)
        with self._lock:
            for values, series in self._series.items():
                labels = tuple(zip(self._labelnames, values, strict=True))
                family.samples.extend(self._samples(labels, series))
        yield family

    def _samples(self, labels: Labels, series: _Series) -> list[Sample]:
        return [("_total", labels, series.value), ("_created", labels, series.created)]


class Counter(_Metric):
    kind = "counter"

    def inc(self, amount: float = 1.0) -> None:
        """Only for a counter without labels."""
        self.labels().inc(amount)


class Histogram(_Metric):
    kind = "histogram"

    def _samples(self, labels: Labels, series: _Series) -> list[Sample]:
        samples: list[Sample] = []
        total = 0.0
        for bound, count in zip(series.buckets, series.counts, strict=True):
            total += count
            samples.append(("_bucket", (*labels, ("le", go_float(bound))), total))
        return [*samples, ("_count", labels, total), ("_sum", labels, series.value),
                ("_created", labels, series.created)]


def go_float(value: float) -> str:
    """A float as Go (and so Prometheus) writes it: ``+Inf``, ``1.0``, ``1.5e+06``."""
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6:  # Go switches to an exponent sooner than Python
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return text


def _render(family: Family) -> str:
    name = family.name + ("_total" if family.kind == "counter" else "")
    help_text = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
    lines = [f"# HELP {name} {help_text}\n", f"# TYPE {name} {family.kind}\n"]
    # prometheus-client puts the OpenMetrics-only _created series in a gauge of their own.
    created = [_line(family.name + suffix, labels, value)
               for suffix, labels, value in family.samples if suffix == "_created"]
    lines += [_line(family.name + suffix, labels, value)
              for suffix, labels, value in family.samples if suffix != "_created"]
    if created:
        lines += [f"# HELP {family.name}_created {help_text}\n",
                  f"# TYPE {family.name}_created gauge\n", *created]
    return "".join(lines)


def _line(name: str, labels: Labels, value: float) -> str:
    if not labels:
        return f"{name} {go_float(value)}\n"
    pairs = ",".join(f'{key}="{_escape(val)}"' for key, val in sorted(labels))
    return f"{name}{{{pairs}}} {go_float(value)}\n"


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
