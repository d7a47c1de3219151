"""What the kernel fast path costs the event loop: ``KernelFirst.apply`` through the real
``KernelCpusetWriter`` on N real cgroup v1 cpuset directories (no processes in them), created
under ``/sys/fs/cgroup/cpuset/nri-cpuset-bench-<pid>/`` and removed at the end.

Each round shrinks every container off one CPU (one step) and grows it back (one step), as a pin
arriving and leaving does; the time is what a hook (or a chunk of the background writer) holds
the event loop for. The writer keeps each cgroup's ``cpuset.cpus`` open after its first write, as
the plugin's does (decision 62), and closes them before the directories go. Needs root and a
cgroup v1 cpuset hierarchy with at least 2 CPUs.

Run: ``python bench/kernel_writes.py [--containers 500] [--rounds 20] [--keep-load-balance]
[--parent-no-load-balance]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from real_cgroups import CPUSET, ROOT, cpuset_children

from cpuset_adapters.cgroup_writer import KernelCpusetWriter
from cpuset_core import ContainerUpdate, CPUSet, Kind
from cpuset_service.kernel_first import KernelFirst

BALANCE = "cpuset.sched_load_balance"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--keep-load-balance", action="store_true",
                        help="the writer leaves cpuset.sched_load_balance at 1 in the container "
                        "cgroups (as before decision 31: each v1 write to a balanced cpuset "
                        "rebuilds the scheduler domains, walking every cpuset and task)")
    parser.add_argument("--parent-no-load-balance", action="store_true",
                        help="also set the containers' parent cgroup's flag to 0 (by default "
                        "it stays 1, as a pod cgroup's does)")
    args = parser.parse_args()
    cpuset = CPUSET
    online = CPUSet.parse((cpuset / "cpuset.cpus").read_text().strip())
    if len(online) < 2:
        print("needs two CPUs in the root cpuset", file=sys.stderr)
        return 2
    with cpuset_children(f"nri-cpuset-bench-{os.getpid()}", args.containers) as (parent, paths):
        writer = KernelCpusetWriter(ROOT, paths.get)
        try:
            if args.parent_no_load_balance:
                (parent / BALANCE).write_text("0")
            first = KernelFirst()
            first.updater = writer
            if args.keep_load_balance:
                writer.clears_balance = False
            print(f"root {BALANCE} {(cpuset / BALANCE).read_text().strip()}, parent "
                  f"{(parent / BALANCE).read_text().strip()}; writer: "
                  f"{'leaves the flag' if args.keep_load_balance else writer.balance_note}")
            smaller = online - CPUSet([online.last()])
            # The first write to each cgroup also clears its flag (itself a rebuild): apart.
            first_shrink = _timed(first, paths, online, smaller)
            first_grow = _timed(first, paths, smaller, online)
            print(f"{args.containers} containers, first shrink / grow: {first_shrink:.2f} ms / "
                  f"{first_grow:.2f} ms")
            shrink, grow = [], []
            for _ in range(args.rounds):
                shrink.append(_timed(first, paths, online, smaller))
                grow.append(_timed(first, paths, smaller, online))
            if not args.keep_load_balance:
                print(f"{args.containers} containers, a new writer's first shrink (flags already "
                      f"0, as after a plugin restart): {_restarted(paths, online, smaller):.2f} ms")
            seen = (cpuset / paths["c0"].lstrip("/") / "cpuset.cpus").read_text().strip()
            assert seen == online.format(), seen
            for name, times in (("shrink", shrink), ("grow", grow)):
                median = statistics.median(times)
                print(f"{args.containers} containers, {name}: p50 {median:.2f} ms, max "
                      f"{max(times):.2f} ms ({median / args.containers * 1000:.1f} µs per "
                      f"container; {args.rounds} rounds after the first; container "
                      f"{BALANCE} "
                      f"{(cpuset / paths['c0'].lstrip('/') / BALANCE).read_text().strip()})")
        finally:
            writer.close_files()  # an open file pins a removed cgroup as a dying one
    return 0


def _restarted(paths: dict[str, str], online: CPUSet, smaller: CPUSet) -> float:
    """A new writer's first step: it writes 0 over the flags the last one cleared."""
    again = KernelFirst()
    again.updater = writer = KernelCpusetWriter(ROOT, paths.get)
    elapsed = _timed(again, paths, online, smaller)
    _timed(again, paths, smaller, online)
    writer.close_files()
    return elapsed


def _timed(first: KernelFirst, paths: dict[str, str], before: CPUSet, after: CPUSet) -> float:
    updates = [ContainerUpdate(container_id=cid, subject=cid, kind=Kind.SHARED, cpus=after,
                               previous_cpus=before, reason="bench") for cid in paths]
    start = time.perf_counter()
    written, left = first.apply(updates)
    elapsed = (time.perf_counter() - start) * 1000
    if left or len(written) != len(updates):
        raise RuntimeError(f"the kernel refused {len(left)} writes")
    return elapsed


if __name__ == "__main__":
    sys.exit(main())
