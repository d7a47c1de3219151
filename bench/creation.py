"""An integer pod's creation on a dense node of the real containerd, nri-cpuset beside a no-op
plugin (issue 45): CRI RunPodSandbox, CreateContainer and StartContainer each, their sum, and
how many shared containers are on the new container's CPUs when its start returns (needs root
and ``scripts/install-containerd``).

For each size in ``--sizes``, the node grows (nri-cpuset connected) to that many running shared
pods (one Burstable container each, 100m, like ``bench/dense.py``'s); then ``--samples``
integer pods (Guaranteed, 1 CPU) with the no-op plugin (``bench/noop_plugin.py``: the same NRI
session and events, empty answers: NRI's own cost of a plugin) and as many with nri-cpuset,
interleaved in pairs whose order flips (no-op, nri-cpuset, nri-cpuset, no-op, no-op, ...):
machine noise falls on both alike, each is as often the first and the second sample after a
switch, and a switch serves two samples. A switch stops one plugin (SIGTERM), starts the other
and waits until it has registered and been synchronized, then :data:`SETTLE` seconds (the
runtime finishing the synchronize under its NRI lock is no creation's cost), then runs one
integer pod that is printed but not counted: a node's plugin is not restarted between pods,
and its first creation after a start is slower (nri-cpuset's CreateContainer took 69 and 133
ms against 24-41 ms for the others at 500 on containerd 1.7, 2026-12-06; why was not looked
into). Each pod is removed after its sample, and with nri-cpuset every shared container is
back on every CPU before the next. The overlap is read from the kernel's cgroups as the start
returned: every shared container's ``cpuset.cpus`` against the new container's.

Prints each sample as it comes, then per size each phase's p50 / min / max with the no-op
plugin and with nri-cpuset, the p50 difference (nri-cpuset − no-op), the overlap's max,
nri-cpuset's own time in each hook, the CPU time the plugin, the runtime (containerd, its
shims and their ``runc`` calls) and the machine used within the three calls (cgroup v1
``cpuacct`` groups of the bench's own, ``bench/cpu_account.py``; not on cgroup v2), the
switches' times; the runtime's version and the load average at the start and the end. Prints
figures only; nothing is asserted.

Run: ``nox -s bench-creation`` or, as root, ``python bench/creation.py [--sizes 200,500]
[--samples 5] [--runtime 1.7|2.x] [--quick]`` (the runtime: ``--runtime``, else
``$NRI_CPUSET_RUNTIME``, else 1.7; ``--quick``: sizes 20,40, 2 samples).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from cpu_account import CpuAccount, available, machine_ns
from creation_figures import (
    Creation,
    hook_ms,
    hook_text,
    interleaved,
    named_p50s,
    phase_rows,
    sample_line,
    switch_line,
)
from dense_fast import config_text
from dense_node import DenseNode, cannot_run_here, overlap
from noop_plugin import NoopProcess

from cpuset_lab.cgroups import online_cpus
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import RUNTIMES, find_installation
from cpuset_lab.plugin_process import PluginProcess

NOOP, PLUGIN = "no-op", "nri-cpuset"
METRICS = "127.0.0.1:19478"
"""Where nri-cpuset serves its metrics: its own time in each hook of a sample is read there."""
HOOK_SECONDS = "nri_cpuset_hook_duration_seconds_sum"
SETTLE = 0.5
"""Seconds after a plugin is synchronized before the next sample (see the module's doc)."""


class CreationBench:
    """The lab's containerd, its dense node, and the two plugins taking turns on it."""

    def __init__(self, workdir: Path, args: argparse.Namespace) -> None:
        self.args = args
        # containerd restarting with 500 containers took 30 s on a busy 2-CPU machine.
        self.lab = LabContainerd(workdir / "lab", start_timeout=300,
                                 installation=find_installation(runtime=args.runtime))
        config = workdir / "config.toml"
        config.write_text(config_text(kernel_updates=True))
        self.plugins: dict[str, PluginProcess] = {
            NOOP: NoopProcess(self.lab.nri_socket, workdir / "noop.log"),
            PLUGIN: PluginProcess(self.lab.nri_socket, workdir / "plugin.log",
                                  listen=METRICS, cri_socket=self.lab.cri_address,
                                  args=("--config", str(config))),
        }
        self.current: PluginProcess | None = None
        # Where each creation's CPU time goes: the plugin, the runtime (containerd with its
        # shims and runc calls), and the whole machine; none on a cgroup v2 host.
        self.accounts = ({"plugin": CpuAccount("nri-bench-plugin"),
                          "runtime": CpuAccount("nri-bench-runtime")} if available() else {})
        self.switches: dict[str, list[float]] = {NOOP: [], PLUGIN: []}
        self.online = online_cpus()

    def run(self) -> None:
        print(f"load average at the start: {_load()}", flush=True)
        for account in self.accounts.values():
            account.open()
        version = self.lab.start()
        if self.accounts and self.lab.pid is not None:
            self.accounts["runtime"].adopt(self.lab.pid)
        print(f"runtime: {version.runtime_name} {version.runtime_version} "
              f"({self.lab.runtime.name}); {len(self.online)} online CPUs; "
              f"{self.args.samples} integer pods per plugin and size; after each nri-cpuset "
              "p50, ms over the no-op's", flush=True)
        self.lab.import_image()
        node = DenseNode(self.lab)
        try:
            for size in self.args.sizes:
                began = time.perf_counter()
                self.use(PLUGIN)  # as on a node: the shared pods run with the plugin there
                node.grow_to(size)
                node.wait_all_on(self.online, time.perf_counter())
                grown = time.perf_counter()
                self.size(node, size)
                print(f"[{size:>4}] took {grown - began:.0f} s to grow the node, "
                      f"{time.perf_counter() - grown:.0f} s to measure", flush=True)
        finally:
            if self.current is not None:
                self.current.stop()
            self.lab.close()
            for account in self.accounts.values():
                account.close()
        print(f"load average at the end: {_load()}", flush=True)

    def size(self, node: DenseNode, size: int) -> None:
        results: dict[str, list[Creation]] = {NOOP: [], PLUGIN: []}
        hooks: list[dict[str, float]] = []
        cpu: dict[str, list[dict[str, float]]] = {NOOP: [], PLUGIN: []}
        self.switches = {NOOP: [], PLUGIN: []}
        for name in interleaved((NOOP, PLUGIN), self.args.samples):
            if self.use(name):
                print(self.timed(node, size, 0, name)[0], flush=True)
            line, creation, hook_times, cpu_ms = self.timed(node, size,
                                                            len(results[name]) + 1, name)
            results[name].append(creation)
            cpu[name].append(cpu_ms)
            if name == PLUGIN:
                hooks.append(hook_times)
            print(line, flush=True)
        for row in phase_rows(size, NOOP, results[NOOP], PLUGIN, results[PLUGIN]):
            print(row, flush=True)
        print(f"[{size:>4}] {PLUGIN}'s own time in each hook of a sample: {named_p50s(hooks)}",
              flush=True)
        for name, used in cpu.items():
            print(f"[{size:>4}] CPU time in a sample's three calls with {name}: "
                  f"{named_p50s(used)}", flush=True)
        print(switch_line(size, self.switches), flush=True)

    def timed(self, node: DenseNode, size: int, number: int,
              name: str) -> tuple[str, Creation, dict[str, float], dict[str, float]]:
        """One sample (``number`` 0: the warm-up), its line, nri-cpuset's own time in each
        hook during it (its metrics, read before and after, never during; none for the no-op
        plugin), and the CPU time used during its three calls (:meth:`sample`)."""
        plugin = name == PLUGIN
        before = self.plugins[name].metric_sums(HOOK_SECONDS, "hook") if plugin else {}
        creation, cpu_ms = self.sample(node)
        line = f"{sample_line(size, number, name, creation)}  CPU: {hook_text(cpu_ms)}"
        if not plugin:
            return line, creation, {}, cpu_ms
        hook_times = hook_ms(before, self.plugins[name].metric_sums(HOOK_SECONDS, "hook"))
        return f"{line}  its hooks: {hook_text(hook_times)}", creation, hook_times, cpu_ms

    def use(self, name: str) -> bool:
        """Make ``name`` the one plugin connected, synchronized and settled; return whether
        it was started for that."""
        wanted = self.plugins[name]
        if self.current is wanted:
            return False
        if self.current is not None:
            self.current.stop()
            self.current = None
        _, synchronized = wanted.next_join(wanted.start)
        self.current = wanted
        if self.accounts:
            self.accounts["plugin"].adopt(wanted.pid)
        self.switches[name].append(synchronized - wanted.started_at)
        time.sleep(SETTLE)
        return True

    def sample(self, node: DenseNode) -> tuple[Creation, dict[str, float]]:
        """One integer pod run, created and started, its overlap read, then removed (and the
        pool back everywhere); with the CPU time, ms, the plugin, the runtime and the machine
        used from before its RunPodSandbox to its StartContainer's return."""
        before = self.cpu_ns()
        probe = node.create_probe("integer")
        after = self.cpu_ns()
        shared = node.cpusets()  # first: the moment its start returned
        sharing = overlap(shared, node.cpus_of(probe.container_id))
        removed = time.perf_counter()
        node.remove_probe(probe)
        node.wait_all_on(self.online, removed)
        return (Creation(probe.runp_ms / 1000, probe.create_ms / 1000, probe.start_ms / 1000,
                         sharing),
                {what: (after[what] - before[what]) / 1e6 for what in after})

    def cpu_ns(self) -> dict[str, int]:
        """Each account's CPU time so far, and the machine's (nothing on a cgroup v2 host)."""
        if not self.accounts:
            return {}
        used = {what: account.used_ns() for what, account in self.accounts.items()}
        return used | {"machine": machine_ns()}


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def sizes(text: str) -> list[int]:
    """``--sizes``: positive integers separated by commas."""
    try:
        found = [int(part) for part in text.split(",")]
    except ValueError:
        found = []
    if not found or min(found) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of positive integers")
    return found


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=[200, 500], type=sizes,
                        help="shared containers running, in turn (default 200,500)")
    parser.add_argument("--samples", type=int, default=5,
                        help="integer pods per plugin and size (default 5)")
    parser.add_argument("--runtime", choices=tuple(RUNTIMES), default=None,
                        help="the lab's containerd (default: $NRI_CPUSET_RUNTIME, else 1.7)")
    parser.add_argument("--quick", action="store_true", help="sizes 20,40 and 2 samples")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.samples = [20, 40], 2
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    return args


def main() -> int:
    args = parse()
    if (why := cannot_run_here()) is not None:
        print(why, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nri-creation-") as tmp:
        CreationBench(Path(tmp), args).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
