"""The plugin's Prometheus metrics read back from their text exposition, as a scraper sees
them: one value per sample name and label set."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from cpuset_adapters.observability.metrics import PluginMetrics


def samples(metrics: PluginMetrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample exposed, keyed by its name and its labels."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(metrics.exposition().decode())
            for s in family.samples}


def value(metrics: PluginMetrics, name: str, **labels: str) -> float | None:
    """The sample ``name`` with exactly ``labels`` (``None``: not exposed)."""
    return samples(metrics).get((name, frozenset(labels.items())))
