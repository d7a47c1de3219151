"""What the quiet-CPU e2e tests share (issue 43): the host's quiet-CPU files held and put back,
the request in CRI-O's words, a quiet pod started and how long its CPU took to become quiet,
whether a CPU is quiet as /proc/irq and sysfs show it, and the plugin's metrics and JSON log
lines."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cpuset_core import CPUSet
from cpuset_lab import quiet_host
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.quiet_host import CPU, IRQ, Snapshot
from tests.e2e.plugin_harness import PATIENCE, Plugin, cpus, integer, pod

QUIET = {"irq-load-balancing.crio.io": "disable", "cpu-c-states.crio.io": "disable"}


@contextmanager
def held_host() -> Iterator[Snapshot]:
    """The host's quiet-CPU files as they were, to the caller alone; put back (and checked) at
    the end (conftest's ``host`` fixture)."""
    if not quiet_host.writable():
        pytest.skip("/proc/irq is not writable here")
    with quiet_host.held():
        saved = quiet_host.snapshot()
        try:
            yield saved
        finally:
            failed = quiet_host.put_back(saved)
            assert not failed, failed
            assert not quiet_host.differences(saved)


@contextmanager
def quiet_pod(cri: KubeletClient, lab: LabContainerd, plugin: Plugin, irqs: list[Path], *,
              record: Callable[[str, object], None], uid: str | None = None) -> Iterator[int]:
    """A Guaranteed pod ``dpdk`` asking for quiet CPUs, with a 1-CPU container: its CPU, once
    quiet. The time from the container's start returning to the CPU quiet (as /proc/irq and
    sysfs show it) is printed and kept as the junit property ``quiet_after_start_ms``
    (``record``: pytest's ``record_property``); the wait is the harness's hang guard."""
    with pod(cri, "dpdk", QosClass.GUARANTEED, annotations=QUIET, uid=uid) as dpdk:
        cid = integer(cri, lab, dpdk, 1)
        started = time.monotonic()  # its CPU read back below counts in the figure: an upper bound
        (cpu,) = cpus(cri, cid)
        while not quiet_on(cpu, irqs) and time.monotonic() - started < PATIENCE:
            time.sleep(0.01)  # finer than wait_until's step: the figure is this loop's
        took = time.monotonic() - started
        print(f"quiet after start: CPU {cpu} quiet {took * 1000:.0f} ms after the start returned")
        record("quiet_after_start_ms", round(took * 1000))
        assert quiet_on(cpu, irqs), (f"CPU {cpu} not quiet within {PATIENCE:.0f} s\n"
                                     f"{plugin.text()[-3000:]}")
        yield cpu


def quiet_on(cpu: int, irqs: list[Path]) -> bool:
    idle = [CPU / f"cpu{cpu}/cpuidle/state{k}/disable" for k in range(8)]
    deep = [p for p in idle[1:] if p.exists()]  # state0 is polling, exit latency 0
    return (all(cpu not in CPUSet.parse(p.read_text().strip()) for p in irqs)
            and cpu not in CPUSet.from_mask(int((IRQ / "default_smp_affinity").read_text()
                                                .strip().replace(",", ""), 16))
            and all(p.read_text().strip() == "1" for p in deep))


def metric(port: int, name: str, **labels: str) -> float | None:
    """The sample ``name{labels}`` the plugin serves on ``port`` (``None`` when absent)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=PATIENCE) as reply:
        text = reply.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


def log_events(text: str) -> list[dict[str, object]]:
    """The plugin's JSON log lines (``--log-format json``)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


class QuietPlugin(Plugin):
    """The plugin with its own journal, its metrics on a free port, logging JSON lines
    (``more``: more flags for ``run``)."""

    def __init__(self, socket_path: Path, tmp_path: Path, more: tuple[str, ...] = ()) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        # The later --log-format wins over the helper's console default.
        super().__init__(socket_path, tmp_path / "plugin.log", (
            "--listen", f"127.0.0.1:{self.port}", "--log-format", "json",
            "--quiet-journal", str(tmp_path / "quiet.json"), *more))

    def repairs(self, what: str) -> float:
        return metric(self.port, "nri_cpuset_quiet_repairs_total", what=what) or 0.0
