"""Kubernetes Events on a dense node: the plugin with ``[events]`` on beside off, in one run on
the real containerd, with the API server answering, unreachable and hanging (needs root and
``scripts/install-containerd``).

The node is filled with N running shared containers (one pod each, as a kubelet runs them;
default 500). Then the plugin is restarted with each setting in turn, ``--rounds`` times round,
``off`` first in each round and once more at the end (a drift over the run, other work on the
machine, falls on every setting alike):

- ``off``: ``[events]`` off, everything else the same;
- ``answering``: on, the lab's fake API server (``cpuset_lab.kube_api``) answering;
- ``unreachable``: on, the kubeconfig's server a port nobody listens on;
- ``hanging``: on, the fake API server taking every request and never answering (each attempt
  ends at the client's timeout).

Under each: start to registered / synchronized; ``--samples`` shared, integer (Guaranteed,
1 CPU) and pinned (``weka.io/cores-ids`` on the last CPU) creations, each removed before the
next: CRI CreateContainer latency, the plugin's own time in that hook (from its metrics), the
CPUs the kernel shows the new container at its start, and the time until every shared
container is on the whole pool again after it left; memory after 12 s at rest (VmRSS, VmHWM);
the events' metrics (sent, aggregated, dropped, pending; failed attempts by reason); and how
long SIGTERM takes to end it.

Each setting's figures are pooled over its rounds; medians are printed beside ``off``'s as a
ratio.

**Placements**: the allocator is deterministic and every probe is removed before the next, so
the CPUs the probes got must be the same list under every setting in every round; each is
compared with the first ``off``'s, and any difference printed.

Run: ``nox -s bench-dense-events`` or ``python bench/dense_events.py [--size 500]
[--samples 5] [--rounds 2] [--quick] [--publisher on]``. Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from dense_fast import Exclusive, FastPathBench, config_text
from dense_node import DenseNode, cannot_run_here

from cpuset_core.cpuset import CPUSet
from cpuset_lab.cgroups import online_cpus
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.kube_api import FakeApi, serve
from cpuset_lab.plugin_process import PluginProcess

REST = 12.0
"""Seconds without events before memory is read: the daemon trims every 10 s when quiet."""
KINDS = ("shared", "integer", "pinned")
OUTCOMES = ("sent", "aggregated", "dropped", "abandoned", "not_composed")
EVENTS = "nri_cpuset_events_total"
FAILURES = "nri_cpuset_event_send_failures_total"


@dataclass(frozen=True, slots=True)
class Setting:
    """One way the plugin runs: its name and the configuration tables it gets."""

    name: str
    tables: str


@dataclass(frozen=True, slots=True)
class Measured:
    """What one setting gave."""

    start: tuple[float, float]
    """Seconds from exec to registered and to synchronized."""
    by_kind: dict[str, Exclusive]
    rss_mib: float
    peak_mib: float
    events: str
    stop_s: float

    def placements(self) -> list[str]:
        return [f"{kind} {cpus}" for kind in KINDS for cpus in self.by_kind[kind].cpus]


def settings(workdir: Path, answering: FakeApi, hanging: FakeApi, rounds: int, *,
             publisher: bool = False) -> list[Setting]:
    """The settings in the order they run; every one names the same node and kubeconfig key,
    so only ``[events]`` and where the kubeconfig points differ (with ``publisher``, the
    topology publisher is on in each, writing where the events go)."""
    nobody = FakeApi(port=_closed_port())

    def events_on(name: str, api: FakeApi) -> Setting:
        return Setting(name, _tables(_kubeconfig(workdir / f"{name}.kubeconfig", api),
                                     events=True, publisher=publisher))

    off = Setting("off", _tables(_kubeconfig(workdir / "off.kubeconfig", answering),
                                 events=False, publisher=publisher))
    one_round = [off, events_on("answering", answering), events_on("unreachable", nobody),
                 events_on("hanging", hanging)]
    return one_round * rounds + [off]


def _tables(kubeconfig: Path, *, events: bool, publisher: bool) -> str:
    return (f'[topology_publisher]\nenabled = {str(publisher).lower()}\n'
            f'node_name = "dense-bench"\nkubeconfig = "{kubeconfig}"\n'
            f"[events]\nenabled = {str(events).lower()}\n")


def _kubeconfig(path: Path, api: FakeApi) -> Path:
    """A kubeconfig for ``api`` in JSON: the plugin reads it without PyYAML (0.9 MiB resident),
    as the DaemonSet's in-cluster credentials need no parser; the lab's YAML one would count a
    module the DaemonSet never loads."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "lab", "cluster": {"server": f"http://127.0.0.1:{api.port}"}}],
        "users": [{"name": "lab", "user": {"token": "lab"}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}]}))
    return path


def _closed_port() -> int:
    """A local port nothing listens on (bound, then closed: connecting is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class EventsBench:
    def __init__(self, workdir: Path, args: argparse.Namespace) -> None:
        self.args, self.workdir = args, workdir
        self.lab = LabContainerd(workdir / "lab", installation=find_installation(),
                                 start_timeout=300)
        self.config = workdir / "config.toml"
        self.config.write_text(config_text(kernel_updates=True))
        self.plugin = PluginProcess(self.lab.nri_socket, workdir / "plugin.log",
                                    listen="127.0.0.1:19478",
                                    status_socket=workdir / "status" / "status.sock",
                                    cri_socket=self.lab.cri_address,
                                    args=("--config", str(self.config)))
        (workdir / "plugin.log").touch()  # counted before the first start
        self.online = online_cpus()
        self.pin = CPUSet([max(self.online)])
        self.fast = FastPathBench(self.plugin, self.config, self.online, self.pin,
                                  args.samples)

    def run(self, order: list[Setting]) -> list[tuple[Setting, Measured]]:
        self.lab.start()
        self.lab.import_image()
        node = DenseNode(self.lab)
        results = []
        try:
            started = time.perf_counter()
            node.grow_to(self.args.size)
            print(f"{self.args.size} shared containers running after "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
            for setting in order:
                results.append((setting, self.measure(node, setting)))
                print(f"{setting.name}: measured", flush=True)
        finally:
            if self.plugin.process is not None:
                self.plugin.stop()
            self.lab.close()
        return results

    def measure(self, node: DenseNode, setting: Setting) -> Measured:
        self.config.write_text(config_text(kernel_updates=True, more=setting.tables))
        registered, synced = self.plugin.next_join(self.plugin.start)
        start = (registered - self.plugin.started_at, synced - self.plugin.started_at)
        node.wait_all_on(self.online, time.perf_counter())
        by_kind = {kind: self.fast.exclusive(node, kind) for kind in KINDS}
        time.sleep(REST)
        memory = self.plugin.memory_kib()
        events = self.events()
        stopping = time.perf_counter()
        code = self.plugin.stop()
        stop_s = time.perf_counter() - stopping
        if code != 0:
            raise RuntimeError(f"the plugin exited {code} on SIGTERM under {setting.name}")
        return Measured(start, by_kind, memory["VmRSS"] / 1024, memory["VmHWM"] / 1024,
                        events, stop_s)

    def events(self) -> str:
        """The events' counters, from the plugin's metrics (zero with events off)."""
        counts = [f"{outcome} {self.plugin.metric(EVENTS, {'outcome': outcome}):.0f}"
                  for outcome in OUTCOMES]
        pending = self.plugin.metric("nri_cpuset_events_pending")
        failed = self.plugin.metric(FAILURES)
        return f"{', '.join(counts)}, pending {pending:.0f}; failed attempts {failed:.0f}"


def report(results: list[tuple[Setting, Measured]], size: int) -> None:
    first_off = results[0][1]
    names = list(dict.fromkeys(setting.name for setting, _ in results))
    pooled = {name: [got for setting, got in results if setting.name == name] for name in names}
    off = pooled["off"]
    print(f"\n== {size} running shared containers; each setting pooled over its "
          f"{len(pooled['answering'])}-{len(off)} runs, ratios against 'off' ==")
    for name, runs in pooled.items():
        print(f"\n[{name}] x{len(runs)}")
        row("start to synchronized", ", ".join(f"{got.start[1]:.3f} s" for got in runs))
        for kind in KINDS:
            row(f"{kind} CreateContainer", beside(runs, off, kind, "create_ms"))
            row(f"  {kind}: the plugin's hook", beside(runs, off, kind, "hook_ms"))
            row(f"  {kind}: pool back on all after removal",
                beside(runs, off, kind, "back_ms"))
        differing = [got.placements() for got in runs
                     if got.placements() != first_off.placements()]
        row("placements (kernel) vs the first off",
            f"DIFFER: {differing}" if differing else "same in every run")
        row("memory at rest: VmRSS / VmHWM", ", ".join(
            f"{got.rss_mib:.1f} / {got.peak_mib:.1f} MiB" for got in runs))
        for got in runs:
            row("events", got.events)
        row("SIGTERM to exit", ", ".join(f"{got.stop_s:.2f} s" for got in runs))
    print("\nplacements under off:", ", ".join(first_off.placements()))


def row(name: str, value: str) -> None:
    print(f"  {name:<44} {value}", flush=True)


def beside(runs: list[Measured], off: list[Measured], kind: str, figure: str) -> str:
    def pool(measured: list[Measured]) -> list[float]:
        return [value for got in measured for value in getattr(got.by_kind[kind], figure)]

    values, base = pool(runs), pool(off)
    mid, base_mid = statistics.median(values), statistics.median(base)
    ratio = f"{mid / base_mid:.2f}x off" if base_mid else "-"
    return f"p50 {mid:7.1f} ms  max {max(values):7.1f} ms  (n={len(values)})  {ratio}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=500, help="running shared containers")
    parser.add_argument("--samples", type=int, default=5,
                        help="creations of each kind under each setting")
    parser.add_argument("--rounds", type=int, default=2, help="times round the settings")
    parser.add_argument("--quick", action="store_true", help="40 containers, 2 samples, 1 round")
    parser.add_argument("--publisher", choices=("off", "on"), default="off",
                        help="the topology publisher on under every setting too")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.samples, args.rounds = 40, 2, 1
    if (why := cannot_run_here()) is not None:
        print(why, file=sys.stderr)
        return 2
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nri-dense-events-") as tmp, ExitStack() as stack:
        answering = stack.enter_context(serve())
        hanging = stack.enter_context(serve("slow"))
        workdir = Path(tmp)
        results = EventsBench(workdir, args).run(settings(
            workdir, answering, hanging, args.rounds, publisher=args.publisher == "on"))
    report(results, args.size)
    print(f"\nwall {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
