"""What the plugin costs on a real containerd 1.7 (needs root and scripts/install-containerd).

Prints, for the same containerd on the same machine:
- CRI CreateContainer latency for N containers (each in its own pod, created beforehand)
  with NRI enabled but no plugin (the baseline), and with `nri-cpuset run` connected; the
  difference is the latency the plugin adds per creation;
- the plugin's resident memory after that run (VmRSS, VmHWM);
- cold start: time from exec of `nri-cpuset run` to "registered" (the pre-installed plugin must
  register within containerd's registration timeout, 5 s by default).

Run: ``python bench/nri_latency.py [--containers 40]`` (also ``nox -s bench -- --nri``).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources


def _create_times(lab: LabContainerd, cri: KubeletClient, count: int) -> list[float]:
    pods = []
    for n in range(count):
        uid = str(uuid.uuid4())
        pods.append(cri.run_pod(PodSpec(name=f"bench-{n}", namespace="bench", uid=uid,
                                        cgroup_parent=cgroup_parent(QosClass.BURSTABLE, uid))))
    times = []
    for n, pod in enumerate(pods):
        start = time.perf_counter()
        cri.create_container(pod, None, f"c{n}", lab.image,
                             **_kwargs(container_resources(cpu_request="100m")))
        times.append((time.perf_counter() - start) * 1000)
    lab.cleanup()
    return times


def _kwargs(resources: object) -> dict[str, int]:
    return {"cpu_quota": getattr(resources, "cpu_quota", 0),
            "cpu_period": getattr(resources, "cpu_period", 0),
            "cpu_shares": getattr(resources, "cpu_shares", 0)}


def _start_plugin(socket: Path, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    """Start the plugin; return it and the seconds from exec to "registered"."""
    start = time.perf_counter()
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "cpuset_cli", "run", "--nri-socket", str(socket)],
            stdout=out, stderr=subprocess.STDOUT)
    while "registered with the runtime" not in log.read_text(errors="replace"):
        if time.perf_counter() - start > 30:
            raise SystemExit(f"plugin did not register:\n{log.read_text()[-2000:]}")
        time.sleep(0.005)
    return process, time.perf_counter() - start


def _memory(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in {"VmRSS", "VmHWM"}:
            fields[key] = value.strip()
    return fields


def _summary(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (f"{name:<34}{statistics.median(times):>9.1f}{p95:>9.1f}{statistics.mean(times):>9.1f}"
            f"{max(times):>9.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int, default=60,
                        help="containers per condition, over all rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold-starts", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (it runs containerd)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nri-bench-") as tmp:
        lab = LabContainerd(Path(tmp) / "lab", installation=find_installation())
        try:
            lab.start()
            lab.import_image()
            cri = lab.client()
            _create_times(lab, cri, 5)  # warm up caches and the image snapshot
            # Alternate the two conditions so warm-up and background noise hit both alike.
            baseline: list[float] = []
            with_plugin: list[float] = []
            memory: dict[str, str] = {}
            per_round = max(1, args.containers // args.rounds)
            for r in range(args.rounds):
                baseline += _create_times(lab, cri, per_round)
                plugin, _ = _start_plugin(lab.nri_socket, Path(tmp) / f"plugin{r}.log")
                time.sleep(0.3)
                with_plugin += _create_times(lab, cri, per_round)
                memory = _memory(plugin.pid)
                plugin.send_signal(signal.SIGTERM)
                plugin.wait(timeout=15)
            colds = []
            for n in range(args.cold_starts):
                process, seconds = _start_plugin(lab.nri_socket, Path(tmp) / f"cold{n}.log")
                colds.append(seconds)
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=15)
        finally:
            lab.close()
    print(f"CRI CreateContainer, {len(baseline)} containers per condition in {args.rounds} "
          f"alternating rounds, same containerd "
          f"(ms){'':>2}p50      p95     mean      max")
    print(_summary("NRI on, no plugin (baseline)", baseline))
    print(_summary("NRI on, nri-cpuset run connected", with_plugin))
    added = statistics.median(with_plugin) - statistics.median(baseline)
    print(f"added by the plugin at p50: {added:.1f} ms "
          f"(ratio {statistics.median(with_plugin) / statistics.median(baseline):.2f})")
    print(f"plugin memory after the run: VmRSS {memory.get('VmRSS')}, peak VmHWM "
          f"{memory.get('VmHWM')}")
    print(f"cold start, exec to registered ({args.cold_starts} runs): "
          f"median {statistics.median(colds):.3f} s, max {max(colds):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
