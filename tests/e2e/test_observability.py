"""Metrics, probes and JSON logs scraped from `nri-cpuset run` on the real containerd (1.7 or 2.x),
while pods are created over CRI like a kubelet would."""

from __future__ import annotations

import json
import signal
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from tests.e2e.plugin_harness import (
    ONLINE,
    PATIENCE,
    Plugin,
    needs_two_cpus,
    pod,
    serving,
    shared,
    wait_until,
)

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ObservedPlugin(Plugin):
    """The plugin serving metrics and probes on ``port``, logging JSON lines."""

    def __init__(self, socket_path: Path, log: Path, port: int) -> None:
        # The later --log-format wins over the helper's console default.
        super().__init__(socket_path, log,
                         ("--listen", f"127.0.0.1:{port}", "--log-format", "json"))
        self.port = port

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}",
                                        timeout=PATIENCE) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def metric(self, name: str, **labels: str) -> float | None:
        """The sample ``name{labels}`` from /metrics (``None`` when absent)."""
        status, text = self.get("/metrics")
        assert status == 200, text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and sample.labels == labels:
                    return sample.value
        return None

    def events(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.text().splitlines() if line.startswith("{")]


@pytest.fixture
def observed(lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> Iterator[ObservedPlugin]:
    with serving(lab, ObservedPlugin(lab.nri_socket, tmp_path / "plugin.log",
                                     free_port())) as running:
        yield running


@needs_two_cpus
def test_metrics_probes_and_json_logs_follow_a_pin_being_admitted_and_one_rejected(
        observed: ObservedPlugin, lab: LabContainerd, cri: KubeletClient) -> None:
    wait_until(lambda: observed.get("/readyz")[0] == 200,
               f"/readyz to turn 200\n{observed.text()[-3000:]}")
    assert observed.get("/healthz") == (200, "ok\n")
    assert observed.get("/nothing-here")[0] == 404
    assert observed.metric("nri_cpuset_runtime_connected") == 1
    assert observed.metric("nri_cpuset_shared_pool_cpus") == len(ONLINE)
    assert observed.metric("nri_cpuset_pinned_cpus") == 0
    last = ONLINE.last()
    with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
        pinned = shared(cri, lab, io, "io")
        assert observed.metric("nri_cpuset_shared_pool_cpus") == len(ONLINE) - 1
        assert observed.metric("nri_cpuset_pinned_cpus") == 1
        assert observed.metric("nri_cpuset_containers", kind="annotated") == 1
        assert observed.metric("nri_cpuset_admissions_total", kind="annotated",
                               result="admitted", reason="") == 1
        with pod(cri, "bad", QosClass.BURSTABLE, pins="7") as bad:
            if 7 not in ONLINE:
                with pytest.raises(CriError):
                    shared(cri, lab, bad, "io")
                assert observed.metric("nri_cpuset_admissions_total", kind="annotated",
                                       result="rejected", reason="cpu-unavailable") == 1
    wait_until(lambda: observed.metric("nri_cpuset_shared_pool_cpus") == len(ONLINE),
               "the shared pool gauge to grow back after the pin's pod is gone")
    created = observed.metric("nri_cpuset_hook_duration_seconds_count",
                              hook="CreateContainer", result="ok")
    assert created is not None
    assert created >= 1
    assert observed.get("/healthz")[0] == 200
    admits = [e for e in observed.events() if e.get("event") == "admit"
              and str(e.get("id")) == pinned[:12]]
    assert len(admits) == 1, observed.text()[-3000:]
    assert admits[0]["container"] == "default/io/io"
    assert (admits[0]["kind"], admits[0]["cpus"], admits[0]["mems"]) == \
        ("annotated", CPUSet([last]).format(), "0")
    assert admits[0]["reason"]
    rejects = [e for e in observed.events() if e.get("event") == "reject"]
    if 7 not in ONLINE:
        assert [r["reason"] for r in rejects] == ["cpu-unavailable"]


def test_sigusr1_switches_debug_logging_off_and_on_without_a_restart(
        observed: ObservedPlugin) -> None:
    assert observed.process is not None
    observed.process.send_signal(signal.SIGUSR1)  # started with --log-level debug
    wait_until(lambda: "log level switched to info" in observed.text(), "the switch to info")
    observed.process.send_signal(signal.SIGUSR1)
    wait_until(lambda: "log level switched to debug" in observed.text(), "the switch back")
    assert observed.get("/healthz")[0] == 200


def test_readyz_fails_when_the_runtime_is_gone_and_recovers_after_it_returns(
        observed: ObservedPlugin, lab: LabContainerd, cri: KubeletClient) -> None:
    wait_until(lambda: observed.get("/readyz")[0] == 200, "/readyz to turn 200")
    lab.kill()
    try:
        wait_until(lambda: observed.get("/readyz")[0] == 503, "/readyz to turn 503")
        assert observed.metric("nri_cpuset_runtime_connected") == 0
        assert observed.get("/healthz")[0] == 200  # not stuck: merely disconnected
    finally:
        lab.start()
    wait_until(lambda: observed.get("/readyz")[0] == 200, "/readyz to turn 200 again")
