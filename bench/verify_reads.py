"""What one verifier pass's reads cost on real cgroups: ``CgroupReader.observe_all`` (the reads
a pass makes in its worker thread) over N real cgroup v1 cpuset directories, created under
``/sys/fs/cgroup/cpuset/nri-cpuset-reads-<pid>/`` (no processes in them) and removed at the
end. ``bench/verify_pass.py`` times the whole pass on a tree of ordinary files; this one the
kernel's own files, whose reads are what a pass takes from a node's CPUs (decision 64).

Run as root: ``python bench/verify_reads.py [--containers 200,500] [--rounds 30]``; with
``PYTHONPATH=<another tree>/src`` it reads with that tree's reader (a before/after in one
run). Prints each size's p50 and min of the wall and CPU time of a pass; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from real_cgroups import CPUSET, ROOT, cpuset_children

from cpuset_adapters.cgroupfs import CgroupReader


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", default="200,500",
                        help="container cgroups per size, comma-separated (default 200,500)")
    parser.add_argument("--rounds", type=int, default=30, help="passes per size (default 30)")
    args = parser.parse_args()
    if os.geteuid() != 0 or not (CPUSET / "cpuset.cpus").is_file():
        print("needs root and a cgroup v1 cpuset hierarchy", file=sys.stderr)
        return 2
    print(f"reader: {sys.modules[CgroupReader.__module__].__file__}")
    for size in (int(part) for part in args.containers.split(",")):
        walls, cpus = passes(size, args.rounds)
        print(f"{size:>5} containers: pass wall p50 {statistics.median(walls):.1f} ms (min "
              f"{min(walls):.1f}), CPU p50 {statistics.median(cpus):.1f} ms (min {min(cpus):.1f})",
              flush=True)
    return 0


def passes(size: int, rounds: int) -> tuple[list[float], list[float]]:
    """``rounds`` passes over ``size`` fresh cgroups: each pass's wall and CPU time, ms."""
    with cpuset_children(f"nri-cpuset-reads-{os.getpid()}", size) as (_, paths):
        reader = CgroupReader(ROOT)
        walls, cpus = [], []
        for _ in range(rounds):
            wall, cpu = time.perf_counter(), time.process_time()
            seen = reader.observe_all(paths, quotas=())
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            unread = [cid for cid, observed in seen.items() if observed.cpus is None]
            if unread:
                raise RuntimeError(f"{len(unread)} cgroups unread, e.g. {seen[unread[0]]}")
        return walls, cpus


if __name__ == "__main__":
    sys.exit(main())
