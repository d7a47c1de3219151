"""A dense node on the real containerd: what the plugin costs with 100 / 300 / 500 running
shared containers (one pod each, like a kubelet runs them), every figure beside its baseline
from the same run (needs root and ``scripts/install-containerd``).

For each size, with the plugin stopped (the baseline) and then running:

- CRI CreateContainer latency of a shared container and of an integer one (Guaranteed, 1 CPU:
  every shared container shrinks off the CPU it takes);
- the runtime's floor: CRI UpdateContainerResources of every shared container, one at a time,
  without the plugin (the runtime's own time for that many updates);
- a pin arriving (``weka.io/cores-ids`` on the last CPU): its CreateContainer latency, the
  plugin's own time in that call (its CreateContainer hook, from its metrics), and the time
  until every shared container's cgroup shows the smaller pool, read from the kernel;
- the pin leaving (stop, remove): the time until every shared container has the pool back;
- shared creations while a client reads the status socket (``inspect``) ten times a
  second, and without pause;
- start (exec → registered → synchronized); kill -9 of the plugin while the pin leaves, then
  the time until registered, synchronized and every correction applied (kernel); kill -9 of
  containerd: from containerd ready again to the plugin registered and synchronized;
- the plugin's RSS (now and peak) and CPU time;
- with ``--publisher on``, all of it with the topology publisher writing the node's
  NodeResourceTopology to a fake API server in this process (``--api`` makes it refuse or hang:
  ``forbidden``, ``crd-missing``, ``conflict``, ``slow``), and the writes it made; run it once
  with ``--publisher off`` beside it to compare;
- the kernel fast path (``bench/dense_fast.py``): integer and pin CreateContainer with no
  plugin / the plugin writing other containers' cpusets into the kernel first / with
  ``runtime.kernel_updates = false``; shared containers still on the new container's CPUs when
  its start returns; the pool back after it is removed; a shared creation while the runtime's
  record catches up; the time until nothing is left to send, and how many records lag then.

Run: ``nox -s bench-dense`` or ``python bench/dense.py [--sizes 100,300,500] [--quick]
[--paths kernel] [--publisher on [--api slow]]`` (``kernel``: the no-plugin baselines and the
fast path only).
Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from dense_fast import HOOK_SECONDS, Exclusive, FastPathBench, config_text
from dense_node import DenseNode, cannot_run_here
from status_reads import reading_status

from cpuset_core.cpuset import CPUSet
from cpuset_lab.cgroups import online_cpus
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.kube_api import FakeApi, serve, write_kubeconfig
from cpuset_lab.plugin_process import PluginProcess

PUBLISHES = "nri_cpuset_topology_publishes_total"
PUBLISH_RESULTS = ("created", "updated", "unreachable", "timeout", "forbidden", "crd-missing",
                   "conflict", "server-error")

REST = 12.0
"""Seconds without events before memory is read: the daemon trims every 10 s when quiet."""


class Report:
    """Rows of ``name  value`` printed as they come (a long run shows progress)."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str, str]] = []

    def add(self, size: int, name: str, value: str) -> None:
        self.rows.append((size, name, value))
        print(f"[{size:>4}] {name:<58} {value}", flush=True)


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    return (f"p50 {statistics.median(ordered):8.1f} ms  max {ordered[-1]:8.1f} ms  "
            f"(n={len(ordered)})")


def with_baseline(value: list[float], baseline: list[float]) -> str:
    added = statistics.median(value) - statistics.median(baseline)
    return f"{ms(value)}  +{added:.1f} ms over baseline p50"


class DenseBench:
    def __init__(self, workdir: Path, args: argparse.Namespace, api: FakeApi | None) -> None:
        self.args, self.api = args, api
        # containerd restarting with 500 containers took 30 s on a busy 2-CPU machine.
        self.lab = LabContainerd(workdir / "lab", installation=find_installation(),
                                 start_timeout=300)
        config = workdir / "config.toml"
        more = "" if api is None else publisher_config(write_kubeconfig(workdir / "kube", api))
        config.write_text(config_text(kernel_updates=True, more=more))
        self.plugin = PluginProcess(self.lab.nri_socket, workdir / "plugin.log",
                                    listen="127.0.0.1:19477",
                                    status_socket=workdir / "status" / "status.sock",
                                    cri_socket=self.lab.cri_address,
                                    args=("--config", str(config)))
        self.report = Report()
        self.online = online_cpus()
        self.pin = CPUSet([max(self.online)])
        self.pool_with_pin = self.online - self.pin
        self.fast = FastPathBench(self.plugin, config, self.online, self.pin, args.pin_samples,
                                  more_config=more)

    def run(self) -> None:
        self.lab.start()
        self.lab.import_image()
        node = DenseNode(self.lab)
        try:
            self.plugin.start()
            self.plugin.wait_for("synchronized", 1)
            for size in self.args.sizes:
                node.grow_to(size)
                self.size(node, size)
        finally:
            if self.plugin.process is not None:
                self.plugin.stop()
            self.lab.close()

    def size(self, node: DenseNode, n: int) -> None:
        node.wait_all_on(self.online, time.perf_counter())
        self.plugin.stop()
        base_shared = self.creations(node, "shared", self.args.samples)
        base_integer = self.fast.exclusive(node, "integer")
        base_pin = self.fast.exclusive(node, "pinned")
        if self.args.paths == "kernel":
            # No-plugin and kernel-first only: the runtime-only path takes ~20 s per
            # creation at 500, and the rest of the run does not concern the fast path.
            self.start_plugin(n, "start (exec)")
            self.kernel_first(node, n, base_integer, base_pin, base_shared)
            return
        floor_shrink = node.update_all(self.pool_with_pin)
        floor_grow = node.update_all(self.online)
        self.report.add(n, "runtime floor: N CRI updates (shrink / grow)",
                        f"{floor_shrink:.2f} s / {floor_grow:.2f} s "
                        f"({floor_shrink / n * 1000:.1f} ms per update)")
        self.start_plugin(n, "start (exec)")
        shared = self.creations(node, "shared", self.args.samples)
        self.report.add(n, "shared CreateContainer (no plugin)", ms(base_shared))
        self.report.add(n, "shared CreateContainer (plugin)", with_baseline(shared, base_shared))
        for pace, how in ((0.1, "every 0.1 s"), (0.0, "nonstop")):
            with reading_status(self.plugin.status_socket, pace) as reads:
                busy = self.creations(node, "shared", self.args.samples)
            self.report.add(n, f"shared CreateContainer, status socket read {how}",
                            f"{with_baseline(busy, base_shared)}; {reads.summary()}")
        self.kernel_first(node, n, base_integer, base_pin, base_shared)
        self.pins(node, n, floor_shrink, floor_grow)
        self.restarts(node, n)
        time.sleep(REST)  # the daemon gives freed memory back when the runtime is quiet
        memory = self.plugin.memory_kib()
        self.report.add(n, f"plugin memory at rest ({REST:.0f} s on): VmRSS / VmHWM (peak)",
                        f"{memory['VmRSS'] / 1024:.1f} MiB / {memory['VmHWM'] / 1024:.1f} MiB")
        self.report.add(n, "plugin CPU time since its last start",
                        f"{self.plugin.cpu_seconds():.2f} s")
        if self.api is not None:
            self.report.add(n, "topology publisher: requests to the API so far (PATCH/POST)",
                            f"{self.api.methods().count('PATCH')} / "
                            f"{self.api.methods().count('POST')}; "
                            f"{self.publishes()} since the plugin's last start")

    def publishes(self) -> str:
        """The plugin's writes of its NodeResourceTopology, by result, from its metrics."""
        counts = {result: self.plugin.metric(PUBLISHES, {"result": result})
                  for result in PUBLISH_RESULTS}
        return ", ".join(f"{result} {count:.0f}" for result, count in counts.items() if count)

    def kernel_first(self, node: DenseNode, n: int, base_integer: Exclusive,
                     base_pin: Exclusive, base_shared: list[float]) -> None:
        """Integer and pinned creations with the fast path on, then off, beside no plugin."""
        on = {kind: self.fast.exclusive(node, kind) for kind in ("integer", "pinned")}
        catch_up = self.fast.during_catch_up(node)
        record_s, agreeing, lagging = self.fast.record_agrees(node)
        paths = [("kernel first", on)]
        if self.args.paths == "all":
            self.fast.restart_with(kernel_updates=False)
            paths.append(("runtime only", {kind: self.fast.exclusive(node, kind)
                                           for kind in ("integer", "pinned")}))
            self.fast.restart_with(kernel_updates=True)
        for kind, base in (("integer", base_integer), ("pinned", base_pin)):
            self.report.add(n, f"{kind} CreateContainer (no plugin)", ms(base.create_ms))
            for path, by_kind in paths:
                figures = by_kind[kind]
                self.report.add(n, f"{kind} CreateContainer ({path})",
                                f"{with_baseline(figures.create_ms, base.create_ms)}")
                self.report.add(n, f"  {path}", figures.summary())
        self.report.add(n, "shared CreateContainer during record catch-up",
                        with_baseline(catch_up, base_shared))
        self.report.add(n, "nothing left to send by itself, from a pin's create",
                        f"{record_s:.2f} s; {agreeing} of {min(n, 20)} CRI records checked "
                        f"agree; records lagging (decision 51): {lagging}")

    def creations(self, node: DenseNode, kind: str, count: int) -> list[float]:
        """CreateContainer latencies of ``count`` probes of ``kind``, each removed (and the
        pool back everywhere) before the next."""
        times = []
        for _ in range(count):
            probe = node.create_probe(kind)
            times.append(probe.create_ms)
            node.remove_probe(probe)
            if self.plugin.process is not None:
                node.wait_all_on(self.online, time.perf_counter())
        return times

    def pins(self, node: DenseNode, n: int, floor_shrink: float, floor_grow: float) -> None:
        creates, own, arriving, leaving = [], [], [], []
        for _ in range(self.args.pin_samples):
            hook_before = self.plugin.metric(HOOK_SECONDS, {"hook": "CreateContainer"})
            probe = node.create_probe("pinned", self.pin)
            own.append((self.plugin.metric(HOOK_SECONDS, {"hook": "CreateContainer"})
                        - hook_before) * 1000)
            creates.append(probe.create_ms)
            arriving.append(node.wait_all_on(self.pool_with_pin, probe.called_at))
            start = time.perf_counter()
            node.remove_probe(probe)
            leaving.append(node.wait_all_on(self.online, start))
        self.report.add(n, "pin CreateContainer (plugin; shrinks N)", ms(creates))
        self.report.add(n, "  the plugin's own time in it (hook)", ms(own))
        self.report.add(n, "pin arriving: all shared on the smaller pool",
                        f"{ms([s * 1000 for s in arriving])}  "
                        f"= {statistics.median(arriving) / floor_shrink:.2f}x the floor")
        self.report.add(n, "pin leaving: all shared on the whole pool again",
                        f"{ms([s * 1000 for s in leaving])}  "
                        f"= {statistics.median(leaving) / floor_grow:.2f}x the floor")

    def restarts(self, node: DenseNode, n: int) -> None:
        probe = node.create_probe("pinned", self.pin)
        node.wait_all_on(self.pool_with_pin, time.perf_counter())
        self.plugin.kill()
        node.remove_probe(probe)  # the pool grows while nobody is there to say so
        self.start_plugin(n, "restart after kill -9")
        corrected = node.wait_all_on(self.online, self.plugin.started_at)
        self.report.add(n, "  every correction applied (kernel), from exec", f"{corrected:.3f} s")
        times: list[float] = []

        def restart_containerd() -> None:
            self.lab.kill()
            times.append(time.perf_counter())
            self.lab.start()
            times.append(time.perf_counter())

        registered, synced = self.plugin.next_join(restart_containerd)
        start, ready = times
        self.report.add(n, "containerd kill -9: containerd ready again",
                        f"{ready - start:.3f} s after its exec")
        self.report.add(n, "  plugin registered / synchronized, from containerd ready",
                        f"{registered - ready:.3f} s / {synced - ready:.3f} s")
        node.cri = self.lab.client()

    def start_plugin(self, n: int, what: str) -> None:
        registered, synced = self.plugin.next_join(self.plugin.start)
        self.report.add(n, f"{what} to registered / synchronized",
                        f"{registered - self.plugin.started_at:.3f} s / "
                        f"{synced - self.plugin.started_at:.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,300,500",
                        type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--samples", type=int, default=10, help="shared creations per size")
    parser.add_argument("--pin-samples", type=int, default=3,
                        help="integer creations and pin arrivals per size")
    parser.add_argument("--quick", action="store_true", help="sizes 20,40 and fewer samples")
    parser.add_argument("--publisher", choices=("off", "on"), default="off",
                        help="on: the plugin publishes its NodeResourceTopology to a fake API "
                        "server in this process")
    parser.add_argument("--api", choices=("ok", "forbidden", "crd-missing", "conflict", "slow"),
                        default="ok", help="how that fake API server answers")
    parser.add_argument("--paths", choices=("all", "kernel"), default="all",
                        help="kernel: only the no-plugin baselines and the kernel fast path "
                        "(no runtime-only path, floor, pins, status reads or restarts)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.samples, args.pin_samples = [20, 40], 3, 2
    if (why := cannot_run_here()) is not None:
        print(why, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nri-dense-") as tmp, ExitStack() as stack:
        api = None if args.publisher == "off" else stack.enter_context(serve(args.api))
        DenseBench(Path(tmp), args, api).run()
    return 0


def publisher_config(kubeconfig: Path) -> str:
    return ("[topology_publisher]\nenabled = true\nnode_name = \"dense-bench\"\n"
            f"kubeconfig = \"{kubeconfig}\"\npolicy = \"single-numa-node\"\n")


if __name__ == "__main__":
    sys.exit(main())
