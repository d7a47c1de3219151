"""The verifier's cost: one pass (snapshot, read every container's cgroup: its cpuset files
and CFS quota; judge) at 100, 500 and 1000 running containers, and what passes running back to
back in their worker thread do to the latency of creation decisions on the event loop's
thread.

The cgroup files are a tree written under a temporary directory (cgroup v1 layout, as the
cgroupfs driver names them), read with the plugin's own reader: the same open/read/close per
file as on cgroupfs. Prints figures only; nothing is asserted.

    PYTHONPATH=src python bench/verify_pass.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from cpuset_adapters.cgroupfs import CgroupReader
from cpuset_core import ContainerFacts, CpusetEngine, PodFacts
from cpuset_lab.machines import EPYC_LIKE, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.verifier import Verifier

PERIOD = 100_000


def node_with(count: int, root: Path) -> tuple[PlacementService, Verifier, CgroupReader]:
    """A service with ``count`` running containers (one in fifty integer, the rest shared) and a
    cgroup tree where every container runs where the ledger says."""
    service = PlacementService(CpusetEngine(build_topology(EPYC_LIKE), confirm_releases=True))
    for n in range(count):
        integer = n % 50 == 0
        parent = f"/kubepods/podp{n}" if integer else f"/kubepods/burstable/podp{n}"
        pod = PodFacts(sandbox_id=f"s{n}", namespace="bench", name=f"p{n}",
                       cgroup_parent=parent)
        facts = ContainerFacts(id=f"c{n:06d}", sandbox_id=f"s{n}", name="app",
                               cpu_quota=PERIOD if integer else None,
                               cpu_period=PERIOD if integer else None,
                               cgroups_path=f"{parent}/c{n:06d}")
        service.admit(pod, facts)
        # Started: the verifier does not read containers still waiting for their start.
        service.starts.started(facts.id, f"bench/p{n}/app")
    pool = service.engine.shared_pool()
    for cid, path in service.cgroup_paths().items():
        entry = service.ledger.entries[cid]
        cpus = pool if entry.cpus is None or not entry.cpus else entry.cpus
        directory = root / "cpuset" / path.lstrip("/")
        directory.mkdir(parents=True)
        for name, text in (("cpuset.cpus", cpus.format()), ("cpuset.mems", "0-7"),
                           ("cpuset.effective_cpus", cpus.format()),
                           ("cpuset.effective_mems", "0-7")):
            (directory / name).write_text(text + "\n")
        # The CFS quota is read too (decision 54): none for the integer ones, as lifted.
        quota = root / "cpu" / path.lstrip("/")
        quota.mkdir(parents=True)
        lifted = cid in service.quota.unthrottled()
        (quota / "cpu.cfs_quota_us").write_text("-1\n" if lifted else f"{PERIOD // 2}\n")
    return service, Verifier(service), CgroupReader(root)


def one_pass(verifier: Verifier, reader: CgroupReader) -> tuple[float, float, int]:
    """Seconds to read, seconds to judge, containers in drift."""
    start = time.perf_counter()
    read_from, paths = verifier.snapshot()
    observed = reader.observe_all(paths, verifier.quotas_judged())
    read = time.perf_counter()
    verdict = verifier.verify(observed, read_from=read_from)
    return read - start, time.perf_counter() - read, len(verdict.drifting)


def admit_latencies(service: PlacementService, rounds: int) -> list[float]:
    """Create and remove one shared container per round; seconds per decision."""
    times = []
    pod = PodFacts(sandbox_id="s-x", namespace="bench", name="x",
                   cgroup_parent="/kubepods/burstable/podx")
    for n in range(rounds):
        facts = ContainerFacts(id=f"x{n}", sandbox_id="s-x", name="x")
        start = time.perf_counter()
        service.admit(pod, facts)
        times.append(time.perf_counter() - start)
        service.remove(facts.id, "bench/x/x")
    return times


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    sizes = (100, 500) if args.quick else (100, 500, 1000)
    passes = 5 if args.quick else 20
    print(f"verifier pass ({passes} passes each; read = each cgroup's 4 cpuset files + CFS quota)")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="nri-cpuset-bench-") as tmp:
            service, verifier, reader = node_with(size, Path(tmp))
            runs = [one_pass(verifier, reader) for _ in range(passes)]
            reads = [r for r, _, _ in runs]
            judges = [j for _, j, _ in runs]
            assert all(d == 0 for _, _, d in runs), "the bench tree must match the ledger"
            whole = (statistics.median(reads) + statistics.median(judges)) * 1000
            print(f"  {size:5d} containers: pass median {whole:7.1f} ms "
                  f"(read {statistics.median(reads) * 1000:6.1f} ms in the worker thread, judge "
                  f"{statistics.median(judges) * 1000:5.1f} ms on the loop), max "
                  f"{max(r + j for r, j, _ in runs) * 1000:7.1f} ms")
    rounds = 300 if args.quick else 2000
    with tempfile.TemporaryDirectory(prefix="nri-cpuset-bench-") as tmp:
        service, verifier, reader = node_with(500, Path(tmp))
        quiet = admit_latencies(service, rounds)
        stop = threading.Event()

        def read_forever() -> None:
            while not stop.is_set():
                reader.observe_all(verifier.snapshot()[1], verifier.quotas_judged())

        worker = threading.Thread(target=read_forever, daemon=True)
        worker.start()
        busy = admit_latencies(service, rounds)
        stop.set()
        worker.join()
    print(f"creation decision at 500 containers, {rounds} rounds: p50/p99 "
          f"{pct(quiet, 0.5):.3f}/{pct(quiet, 0.99):.3f} ms alone, "
          f"{pct(busy, 0.5):.3f}/{pct(busy, 0.99):.3f} ms while passes read back to back "
          f"(ratio p99 {pct(busy, 0.99) / pct(quiet, 0.99):.2f}; the daemon reads once per "
          f"burst and every 5 s, not back to back)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
