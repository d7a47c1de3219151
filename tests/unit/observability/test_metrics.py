"""The Prometheus metrics: counters from the Observer reports, gauges read from the live state
at scrape time, buckets sized to the runtime's request timeout, low-cardinality labels."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cpuset_adapters.observability.metrics import PluginMetrics, StateSample, hook_buckets
from cpuset_core import Kind
from tests.support.metrics_text import samples, value


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


STATE = StateSample(exclusive_cpus=2, shared_pool_cpus=12, pinned_cpus=2,
                    containers={Kind.SHARED: 3, Kind.INTEGER: 1}, runtime_connected=True,
                    synchronized=True)


def test_buckets_scale_with_the_request_timeout_and_end_at_it() -> None:
    assert hook_buckets(2.0)[-1] == 2.0
    assert hook_buckets(2.0)[0] == 0.001
    assert hook_buckets(10.0)[-1] == 10.0
    assert hook_buckets(0) == hook_buckets(2.0)  # 0: the runtime did not say; NRI's default


def test_hook_durations_are_measured_with_the_clock_per_hook_and_result() -> None:
    clock = Clock()
    metrics = PluginMetrics(2.0, clock=clock)
    token = metrics.hook_started("CreateContainer", 2000)
    clock.now += 0.003
    metrics.hook_finished(token, "ok")
    token = metrics.hook_started("CreateContainer", 2000)
    clock.now += 1.5
    metrics.hook_finished(token, "error")
    name = "nri_cpuset_hook_duration_seconds"
    assert value(metrics, f"{name}_count", hook="CreateContainer", result="ok") == 1
    assert value(metrics, f"{name}_sum", hook="CreateContainer", result="ok") == \
        pytest.approx(0.003)
    assert value(metrics, f"{name}_bucket", hook="CreateContainer", result="ok",
                 le="0.005") == 1
    assert value(metrics, f"{name}_bucket", hook="CreateContainer", result="ok",
                 le="0.002") == 0
    assert value(metrics, f"{name}_bucket", hook="CreateContainer", result="error",
                 le="1.0") == 0
    assert value(metrics, f"{name}_bucket", hook="CreateContainer", result="error",
                 le="2.0") == 1


def test_admissions_count_by_kind_result_and_reason() -> None:
    metrics = PluginMetrics()
    metrics.admission(Kind.ANNOTATED, "admitted", "")
    metrics.admission(Kind.ANNOTATED, "rejected", "cpu-unavailable")
    metrics.admission(Kind.ANNOTATED, "rejected", "cpu-unavailable")
    name = "nri_cpuset_admissions_total"
    assert value(metrics, name, kind="annotated", result="admitted", reason="") == 1
    assert value(metrics, name, kind="annotated", result="rejected",
                 reason="cpu-unavailable") == 2
    assert value(metrics, name, kind="integer", result="admitted", reason="") == 0


def test_update_batches_and_their_updates_count_by_outcome() -> None:
    metrics = PluginMetrics()
    metrics.update_batch("applied", ["a", "b", "c"])
    metrics.update_batch("failed", ["a", "b"])
    metrics.update_batch("rolled_back", ["a"])
    metrics.response_updates(["a", "b", "c", "d", "e"], 1)
    assert value(metrics, "nri_cpuset_update_batches_total", outcome="applied") == 1
    assert value(metrics, "nri_cpuset_live_updates_total", outcome="applied") == 3
    assert value(metrics, "nri_cpuset_live_updates_total", outcome="failed") == 2
    assert value(metrics, "nri_cpuset_live_updates_total", outcome="rolled_back") == 1
    assert value(metrics, "nri_cpuset_response_updates_total") == 5
    assert value(metrics, "nri_cpuset_live_moves_total") == 1


def test_state_gauges_follow_the_live_state_at_each_scrape() -> None:
    metrics = PluginMetrics()
    assert value(metrics, "nri_cpuset_shared_pool_cpus") is None  # nothing to read yet
    state = STATE
    metrics.watch(lambda: state)
    assert value(metrics, "nri_cpuset_shared_pool_cpus") == 12
    assert value(metrics, "nri_cpuset_exclusive_cpus") == 2
    assert value(metrics, "nri_cpuset_pinned_cpus") == 2
    assert value(metrics, "nri_cpuset_runtime_connected") == 1
    assert value(metrics, "nri_cpuset_containers", kind="annotated") == 0
    assert value(metrics, "nri_cpuset_containers", kind="shared") == 3
    state = replace(STATE, shared_pool_cpus=11, pinned_cpus=3, runtime_connected=False)
    assert value(metrics, "nri_cpuset_shared_pool_cpus") == 11
    assert value(metrics, "nri_cpuset_pinned_cpus") == 3
    assert value(metrics, "nri_cpuset_runtime_connected") == 0


def test_containers_away_from_their_devices_are_a_gauge_by_kind() -> None:
    metrics = PluginMetrics()
    metrics.watch(lambda: replace(STATE, away_from_devices={Kind.ANNOTATED: 2}))
    assert value(metrics, "nri_cpuset_containers_away_from_devices", kind="annotated") == 2
    assert value(metrics, "nri_cpuset_containers_away_from_devices", kind="integer") == 0


def test_drift_counts_add_up_by_state() -> None:
    metrics = PluginMetrics()
    assert value(metrics, "nri_cpuset_drift_containers_total", state="unrepaired") == 0
    metrics.drift(2, 0)
    metrics.drift(1, 1)
    assert value(metrics, "nri_cpuset_drift_containers_total", state="repaired") == 3
    assert value(metrics, "nri_cpuset_drift_containers_total", state="unrepaired") == 1


def test_systemd_unit_writes_count_containers_by_outcome_from_zero() -> None:
    metrics = PluginMetrics()
    assert value(metrics, "nri_cpuset_systemd_unit_updates_total", outcome="no-bus") == 0
    assert value(metrics, "nri_cpuset_systemd_unit_updates_total", outcome="busy") == 0
    metrics.systemd_units("set", 200)
    metrics.systemd_units("timeout", 3)
    assert value(metrics, "nri_cpuset_systemd_unit_updates_total", outcome="set") == 200
    assert value(metrics, "nri_cpuset_systemd_unit_updates_total", outcome="timeout") == 3


def test_quiet_cpu_files_count_by_outcome_from_zero() -> None:
    metrics = PluginMetrics()
    assert value(metrics, "nri_cpuset_quiet_files_total", outcome="skipped") == 0
    metrics.quiet_files("changed", 20)
    metrics.quiet_files("changed", 2)
    assert value(metrics, "nri_cpuset_quiet_files_total", outcome="changed") == 22


def test_a_failing_state_read_leaves_the_other_metrics_served() -> None:
    metrics = PluginMetrics()

    def broken() -> StateSample:
        raise RuntimeError("boom")

    metrics.watch(broken)
    metrics.admission(Kind.SHARED, "admitted", "")
    assert value(metrics, "nri_cpuset_admissions_total", kind="shared", result="admitted",
                 reason="") == 1
    assert value(metrics, "nri_cpuset_shared_pool_cpus") is None


def test_labels_are_low_cardinality_and_never_name_a_pod() -> None:
    metrics = PluginMetrics()
    metrics.watch(lambda: STATE)
    for hook in ("CreateContainer", "StopContainer", "Synchronize"):
        metrics.hook_finished(metrics.hook_started(hook, 2000), "ok")
    for kind in Kind:
        metrics.admission(kind, "rejected", "insufficient-cpus")
    metrics.update_batch("applied", ["web-7f9c"])
    text = metrics.exposition().decode()
    assert "web-7f9c" not in text  # the decisions above named no pod, and neither may a label
    allowed = {"hook", "result", "kind", "reason", "outcome", "state", "cause", "what", "le"}
    names = {name for (_, labels) in samples(metrics) for name, _ in labels}
    assert names <= allowed
    assert all(n.startswith("nri_cpuset_") for n, _ in samples(metrics))


def test_topology_writes_count_by_result_and_the_gauge_appears_only_with_a_publisher() -> None:
    metrics = PluginMetrics()
    metrics.watch(lambda: StateSample(exclusive_cpus=0, shared_pool_cpus=4, pinned_cpus=0,
                                      containers={}, runtime_connected=True,
                                      synchronized=True))
    assert value(metrics, "nri_cpuset_topology_current") is None  # no publisher
    metrics.topology_current(current=False)
    assert value(metrics, "nri_cpuset_topology_current") == 0
    metrics.topology_published("forbidden", current=False)
    metrics.topology_published("forbidden", current=False)
    metrics.topology_published("created", current=True)
    name = "nri_cpuset_topology_publishes_total"
    assert value(metrics, name, result="forbidden") == 2
    assert value(metrics, name, result="created") == 1
    assert value(metrics, name, result="crd-missing") == 0  # every result exists from the start
    assert value(metrics, "nri_cpuset_topology_current") == 1


def test_quiet_cpu_repairs_count_by_what_from_zero() -> None:
    metrics = PluginMetrics()
    assert value(metrics, "nri_cpuset_quiet_repairs_total", what="idle") == 0
    metrics.quiet_repairs("irq", 2)
    assert value(metrics, "nri_cpuset_quiet_repairs_total", what="irq") == 2
