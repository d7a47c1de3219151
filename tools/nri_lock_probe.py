"""Does an UpdateContainers call that overlaps an NRI event deadlock this containerd?

Decision 23: NRI before v0.12.1 holds its adaptation lock across UpdateContainers and takes it
to deliver events, while containerd holds its own NRI lock across both, in the other order. The
plugin therefore calls UpdateContainers only after 2 s of quiet on runtimes whose Configure does
not name NRI >= v0.12.1. This probe tells, for a lab runtime, whether that rule is needed: it
runs ``nri-cpuset run`` either as shipped or told that the locks are safe (``--locks-safe``:
its own calls then go out at once, as on NRI >= v0.12.1), and drives bursts of shared pods with
a pin arriving mid-burst, then stops and removes them all while the plugin sends the pool's
growth. A CRI call that takes longer than ``--stuck`` seconds (or hits its deadline) means the
runtime is deadlocked: the probe then asks containerd for its goroutines (SIGUSR1), prints the
ones waiting on a lock in NRI code, and tries a pod again with the plugin running and after it
exited (decision 51: on 1.7.24 neither frees it; only a containerd restart does).

    NRI_CPUSET_RUNTIME=2.x python tools/nri_lock_probe.py --locks-safe   # root, lab installed

Prints the runtime, the NRI version Configure named, each repetition's slowest CRI call and a
verdict; exit code 1 when a call was stuck. Not a test: on a runtime that deadlocks it wedges
its lab containerd for good (the probe stops it at the end).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from cpuset_adapters.cri.client import CriError
from cpuset_lab import cgroups, plugin_log
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources

T = TypeVar("T")
PIN_KEY = "weka.io/cores-ids"
# The daemon as shipped, or with locks_are_safe answering True whatever Configure said.
LOCKS_SAFE = ("import cpuset_cli.daemon.plugin as daemon; "
              "daemon.locks_are_safe = lambda nri_version: True; "
              "from cpuset_cli.main import cli; cli()")


class Stuck(Exception):  # noqa: N818 - reads as what happened
    """A CRI call took longer than the probe allows: the runtime is deadlocked."""


class Probe:
    def __init__(self, lab: LabContainerd, stuck: float) -> None:
        self.lab = lab
        self.stuck = stuck
        self.cri = KubeletClient(lab.cri_address, timeout=stuck)
        self.slowest = 0.0

    def timed(self, what: str, call: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            return call()
        except CriError as err:
            raise Stuck(f"{what}: {err}") from err
        finally:
            took = time.monotonic() - started
            self.slowest = max(self.slowest, took)
            if took > self.stuck:
                raise Stuck(f"{what} took {took:.1f} s")

    def run_pod(self, name: str, pins: str | None = None) -> str:
        uid = os.urandom(8).hex()
        spec = PodSpec(name=name, namespace="lock-probe", uid=uid,
                       cgroup_parent=cgroup_parent(QosClass.BURSTABLE, uid),
                       annotations={PIN_KEY: pins} if pins is not None else {})
        pod = self.timed("RunPodSandbox", lambda: self.cri.run_pod(spec))
        self.timed("CreateContainer", lambda: self.cri.run_container(
            pod, "app", self.lab.image, resources=container_resources(cpu_request="100m")))
        return pod

    def gone(self, pod: str) -> None:
        self.timed("StopPodSandbox", lambda: self.cri.stop_pod(pod))
        self.timed("RemovePodSandbox", lambda: self.cri.remove_pod(pod))

    def repetition(self, number: int, size: int) -> None:
        """``size`` shared pods by 3 workers, a pinned pod mid-burst, then all of them gone."""
        last = str(cgroups.online_cpus().last())
        names = [f"r{number}-{n}" for n in range(size)]
        with ThreadPoolExecutor(3) as workers:
            pods = list(workers.map(self.run_pod, names[: size // 2]))
            later = workers.map(self.run_pod, names[size // 2:])
            pinned = self.run_pod(f"r{number}-pin", pins=last)
            pods += list(later)
            self.gone(pinned)
            list(workers.map(self.gone, pods))


def start_plugin(lab: LabContainerd, log: Path, *, locks_safe: bool) -> subprocess.Popen[bytes]:
    code = ["-c", LOCKS_SAFE] if locks_safe else ["-m", "cpuset_cli"]
    with log.open("ab") as out:
        plugin = subprocess.Popen([sys.executable, *code, "run", "--nri-socket",
                                   str(lab.nri_socket), "--log-format", "console"],
                                  stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while plugin_log.synchronized(log.read_text(errors="replace")) == 0:
        if time.monotonic() > deadline or plugin.poll() is not None:
            plugin.kill()
            raise SystemExit(f"the plugin did not synchronize:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    return plugin


def what_waits(lab: LabContainerd, work: Path) -> str:
    """containerd's goroutines (SIGUSR1 makes it log them) that wait on a mutex in NRI code,
    kept whole in ``goroutines.txt``."""
    if lab.pid is None:
        return "containerd is not running"
    log = lab.config.log_path
    before = log.stat().st_size
    os.kill(lab.pid, signal.SIGUSR1)
    time.sleep(3)
    with log.open("rb") as text:
        text.seek(before)
        dump = text.read().decode(errors="replace").replace("\\n", "\n").replace("\\t", "\t")
    (work / "goroutines.txt").write_text(dump)
    stacks = [g for g in dump.split("\n\n") if "nri" in g and "Lock" in g]
    lines = [f"{len(stacks)} goroutine(s) waiting on a lock in NRI code (all in "
             f"{work / 'goroutines.txt'}):"]
    for stack in stacks:
        frames = [f.strip() for f in stack.splitlines()
                  if "(" in f and not f.startswith("\t") and "runtime." not in f]
        lines.append("  " + stack.splitlines()[0].strip() + ": " + " <- ".join(frames[:8]))
    return "\n".join(lines)


def answers_again(probe: Probe, within: float) -> str:
    """Whether a call that passes through NRI (a pod run and removed) goes through."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            probe.gone(probe.run_pod(f"after-{int(time.monotonic())}"))
            return "the runtime answers again"
        except Stuck as stuck:
            last = str(stuck)
    return f"still stuck after {within:.0f} s ({last})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locks-safe", action="store_true",
                        help="tell the plugin the runtime's NRI locks are safe (NRI >= v0.12.1)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", type=int, default=20, help="shared pods per repetition")
    parser.add_argument("--stuck", type=float, default=20.0,
                        help="seconds after which a CRI call counts as deadlocked")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nri-lock-probe-"))
    lab = LabContainerd(work / "lab")
    version = lab.start()
    lab.import_image()
    log = work / "plugin.log"
    plugin = start_plugin(lab, log, locks_safe=args.locks_safe)
    configured = re.search(r"configured by (.*?); subscribed", log.read_text())
    print(f"lab runtime {lab.runtime.name}, CRI says containerd {version.runtime_version}; "
          f"Configure: {configured.group(1) if configured else 'not logged'}; plugin "
          f"{'told the locks are safe' if args.locks_safe else 'as shipped'}", flush=True)
    probe = Probe(lab, args.stuck)
    verdict = 0
    try:
        for number in range(args.repeats):
            probe.repetition(number, args.size)
            print(f"repetition {number}: slowest CRI call {probe.slowest:.2f} s", flush=True)
    except Stuck as stuck:
        print(f"DEADLOCK: {stuck}", flush=True)
        verdict = 1
        print(what_waits(lab, work), flush=True)
        print(f"with the plugin still running: {answers_again(probe, 60)}", flush=True)
        plugin.terminate()
        plugin.wait(timeout=15)
        print(f"after the plugin exited: {answers_again(probe, 60)}", flush=True)
    finally:
        if plugin.poll() is None:
            plugin.terminate()
            plugin.wait(timeout=15)
        lab.close()
    if not verdict:
        print(f"no deadlock in {args.repeats} repetitions: slowest CRI call "
              f"{probe.slowest:.2f} s")
    print(f"logs: {work}")
    return verdict


if __name__ == "__main__":
    sys.exit(main())
