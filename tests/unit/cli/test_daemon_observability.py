"""The daemon as build_daemon wires it: one set of metrics fed by the handler and read from
the live state, probes from the session and handler, and an HTTP endpoint that is optional."""

from __future__ import annotations

import logging
import socket

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap
from cpuset_cli.daemon.plugin import Daemon
from cpuset_cli.main import cli
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from tests.builders.nri import container, pod


def build(**kwargs: object) -> Daemon:
    return bootstrap.build_daemon(StaticTopologySource(build_topology(DUAL_SOCKET_HT)),
                                  environ={}, name="nri-cpuset", index="99",
                                  socket_path="/nonexistent", **kwargs)  # type: ignore[arg-type]


def metric(daemon: Daemon, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(daemon.metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return None


def test_gauges_and_counters_follow_the_decisions_the_handler_takes() -> None:
    daemon = build()
    assert metric(daemon, "nri_cpuset_shared_pool_cpus") == 16
    db = pod("db")
    daemon.handler.on_create_container(db, container("pg", db, cpus=2))
    assert metric(daemon, "nri_cpuset_shared_pool_cpus") == 14
    assert metric(daemon, "nri_cpuset_exclusive_cpus") == 2
    assert metric(daemon, "nri_cpuset_containers", kind="integer") == 1
    assert metric(daemon, "nri_cpuset_admissions_total", kind="integer", result="admitted",
                  reason="") == 1
    assert metric(daemon, "nri_cpuset_runtime_connected") == 0


def test_a_synchronizes_drift_reaches_the_metrics_and_the_statistics() -> None:
    daemon = build()
    assert metric(daemon, "nri_cpuset_drift_containers_total", state="repaired") == 0
    web = pod("web", qos="burstable")
    daemon.handler.on_synchronize([web], [container("app", web, cpuset="3")])
    assert metric(daemon, "nri_cpuset_drift_containers_total", state="repaired") == 1
    assert metric(daemon, "nri_cpuset_drift_containers_total", state="unrepaired") == 0
    assert daemon.service.statistics.drift_counts() == (1, 0)


def test_the_request_timeout_sizes_the_hook_buckets() -> None:
    daemon = build(request_timeout=5.0)
    daemon.metrics.hook_finished(daemon.metrics.hook_started("Synchronize", 5000), "ok")
    assert metric(daemon, "nri_cpuset_hook_duration_seconds_bucket", hook="Synchronize",
                  result="ok", le="5.0") == 1


def test_ready_only_when_registered_and_synchronized() -> None:
    daemon = build()
    assert not daemon.introspection.readiness().ok
    daemon.service.synchronized = True
    assert daemon.introspection.readiness().detail == "not registered with the runtime"
    assert daemon.introspection.health().ok


def test_a_busy_listen_address_is_logged_and_the_plugin_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        daemon = build(listen=f"127.0.0.1:{busy.getsockname()[1]}")
        with caplog.at_level(logging.ERROR):
            assert daemon.introspection.serve_http() is None
    assert "metrics and probes not served on 127.0.0.1:" in caplog.text


def test_an_empty_listen_address_serves_nothing() -> None:
    assert build(listen="").listen is None
    assert build(listen="").introspection.serve_http() is None


def test_run_offers_the_listen_address_and_log_format() -> None:
    text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert "--listen HOST:PORT" in text
    assert "127.0.0.1:9477" in text
    assert "[console|json]" in text
