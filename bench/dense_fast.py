"""The kernel fast path on a dense node, for ``bench/dense.py``: integer and pinned creations
with the plugin writing other containers' cpusets into the kernel first and with it off
(``runtime.kernel_updates``), beside the no-plugin baseline of the same run; how many shared
containers still share the new container's CPUs when its start returns; how soon the pool is
back after it leaves; a shared creation while the runtime's record catches up; and how long
until that record agrees.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from dense_node import DenseNode

from cpuset_adapters.status_socket import read_status
from cpuset_core.cpuset import CPUSet
from cpuset_lab.plugin_process import PluginProcess

RECORD_SAMPLE = 20
"""Shared containers whose CRI record is read once the plugin says nothing is pending."""
POLL = 0.05
HOOK_SECONDS = "nri_cpuset_hook_duration_seconds_sum"
HOOK = {"hook": "CreateContainer"}


def config_text(kernel_updates: bool, more: str = "") -> str:
    """The plugin's configuration; ``more``: further tables (the topology publisher's)."""
    return f"[runtime]\nkernel_updates = {str(kernel_updates).lower()}\n{more}"


class Exclusive:
    """One path's figures for integer or pinned creations."""

    def __init__(self) -> None:
        self.create_ms: list[float] = []
        self.sharing: list[int] = []
        self.back_ms: list[float] = []
        self.off_at_first_look: list[int] = []
        """Shared containers not yet on the whole pool in the first sweep, which begins as the
        removal returns: 0 means each was back before the bench could read it."""
        self.first_look_ms: list[float] = []
        """How long that one sweep of every shared cgroup took (the resolution of back_ms)."""
        self.hook_ms: list[float] = []
        """The plugin's own time in each CreateContainer (empty without the plugin)."""
        self.cpus: list[CPUSet | None] = []
        """Each new container's ``cpuset.cpus`` as the kernel showed it at its start."""

    def summary(self) -> str:
        hook = (f"hook p50 {statistics.median(self.hook_ms):.1f} ms, max "
                f"{max(self.hook_ms):.1f} ms (first {self.hook_ms[0]:.1f} ms); "
                if self.hook_ms else "")
        return (f"{hook}shared containers on its CPUs at start: max {max(self.sharing)}; "
                f"pool back on all, from the removal's return: p50 "
                f"{statistics.median(self.back_ms):.0f} ms, max {max(self.back_ms):.0f} ms; "
                f"off it at the first look: max {max(self.off_at_first_look)} (that sweep "
                f"took p50 {statistics.median(self.first_look_ms):.0f} ms)")


class FastPathBench:
    """Runs the comparisons; the plugin is ``plugin`` started with ``--config config``."""

    def __init__(self, plugin: PluginProcess, config: Path, online: CPUSet, pin: CPUSet,
                 samples: int, *, more_config: str = "") -> None:
        self.plugin, self.config, self.more_config = plugin, config, more_config
        self.online, self.pin, self.samples = online, pin, samples

    def exclusive(self, node: DenseNode, kind: str) -> Exclusive:
        """``samples`` creations of ``kind`` (integer or pinned), each removed again."""
        figures = Exclusive()
        running = self.plugin.process is not None
        for _ in range(self.samples):
            hook_before = self.plugin.metric(HOOK_SECONDS, HOOK) if running else 0.0
            probe = node.create_probe(kind, self.pin if kind == "pinned" else None)
            if running:
                figures.hook_ms.append(
                    (self.plugin.metric(HOOK_SECONDS, HOOK) - hook_before) * 1000)
            figures.create_ms.append(probe.create_ms)
            mine = node.cpus_of(probe.container_id)
            figures.cpus.append(mine)
            figures.sharing.append(node.sharing(mine))
            node.remove_probe(probe)
            removed = time.perf_counter()
            figures.off_at_first_look.append(len(node.off(self.online)))
            figures.first_look_ms.append((time.perf_counter() - removed) * 1000)
            figures.back_ms.append(node.wait_all_on(self.online, removed) * 1000)
        return figures

    def during_catch_up(self, node: DenseNode) -> list[float]:
        """Shared CreateContainer latencies right after a pin shrank every shared container
        (their runtime records are then catching up)."""
        pin = node.create_probe("pinned", self.pin)
        times = []
        for _ in range(self.samples):
            probe = node.create_probe("shared")
            times.append(probe.create_ms)
            node.remove_probe(probe)
        node.remove_probe(pin)
        node.wait_all_on(self.online, time.perf_counter())
        self.wait_nothing_pending()
        return times

    def record_agrees(self, node: DenseNode) -> tuple[float, int, int]:
        """Seconds from a pin's CreateContainer until the plugin has nothing left to send by
        itself (on a runtime with NRI v0.12.1 or later: every runtime record sent), how many
        of a sample of shared containers' CRI records then show the smaller pool, and how many
        records the plugin says lag (on containerd 1.7 and 2.1 they follow on the runtime's
        answers only: decision 51)."""
        pin = node.create_probe("pinned", self.pin)
        done = self.wait_nothing_pending() - pin.called_at
        pool = self.online - self.pin
        sample = list(node.cgroups)[:RECORD_SAMPLE]
        agreeing = sum(1 for cid in sample if _recorded(node, cid) == pool)
        assert self.plugin.status_socket is not None
        lagging = len(json.loads(read_status(self.plugin.status_socket))
                      .get("records_lagging", []))
        node.remove_probe(pin)
        node.wait_all_on(self.online, time.perf_counter())
        self.wait_nothing_pending()
        return done, agreeing, lagging

    def wait_nothing_pending(self, timeout: float = 600.0) -> float:
        assert self.plugin.status_socket is not None
        deadline = time.perf_counter() + timeout
        while True:
            state = json.loads(read_status(self.plugin.status_socket))
            now = time.perf_counter()
            if not state.get("pending_updates"):
                return now
            if now > deadline:
                raise TimeoutError(f"{len(state['pending_updates'])} updates still pending")
            time.sleep(POLL)

    def restart_with(self, kernel_updates: bool) -> None:
        """Restart the plugin with the fast path on or off (and wait for its synchronize)."""
        self.plugin.stop()
        self.config.write_text(config_text(kernel_updates, self.more_config))
        synchronized = self.plugin.count("synchronized")
        self.plugin.start()
        self.plugin.wait_for("synchronized", synchronized + 1, timeout=300)


def _recorded(node: DenseNode, cid: str) -> CPUSet | None:
    resources = node.cri.container_status(cid).resources
    return CPUSet.parse(resources.cpuset_cpus) if resources and resources.cpuset_cpus else None
