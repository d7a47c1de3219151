"""Allocation quality: our engine vs the kubelet's packed ``takeByTopology``, trace × topology.

Every trace is replayed twice on every machine shape:

* **ours**: through the real engine, by the replay behind ``nri-cpuset simulate``
  (``cpuset_cli.simulate.replay``), metrics and all;
* **kubelet**: through ``bench/kubelet_baseline.py`` (the static CPU manager's default packed
  ``takeByTopology``), replayed here by :func:`replay_with_allocator` with the same metric
  recorder (``cpuset_cli.placement_quality``) and the same free-CPU definition; pinned
  (annotated) CPUs are simply unavailable to it, and a pin never moves its containers (the
  kubelet does not know pins).

Traces (deterministic, seeded; "capacity" = online CPUs that exclusive requests may use):

* ``churn``: random adds and deletes, requests 1–32 (log-uniform, at most half the capacity on
  small machines), live requests kept at ≤ 85 % of capacity;
* ``fragment``: fill with odd requests (1, 3, 5, 7) to 85 %, delete a random half, ask for a
  NUMA-sized request (the whole CPUs of one node; half the machine on single-node machines) and
  release it; repeat;
* ``numa-fill``: churn of requests of NUMA size − 1, NUMA size and NUMA size + 1;
* ``pinned``: ``churn`` where 10 % of adds are annotated pins of 1–2 threads chosen, while the
  trace is generated, on cores where *both* policies have an integer container at that moment
  (the last thread of such a core: the free sibling of a half-owned core, or a thread of a
  wholly-owned one, which makes our engine move that container). Both policies are stepped
  through the trace as it is written, so the trace is fixed before either is measured and is
  the same for both.
* ``workloads``: churn of issue 32's per-workload requests: plain integer requests, *mixed*
  ones (a fractional ``millis`` limit of at least one CPU, ``mixed-cpus``), *opted-out*
  integer ones (``shared-cpus``) and, only on machines with isolated CPUs (OFFLINE_ISOLATED,
  not in ``--quick``: run it with ``--machine OFFLINE_ISOLATED``), *isolated* ones
  (``isolated-cpus``, sized for the isolated CPUs). Ours replays the annotations through the
  real engine, as on a node. The kubelet has no equivalent for any of the three: it shares a
  fractional container (no exclusive CPU), gives an opted-out whole-CPU container exclusive
  CPUs anyway, and never gives isolated CPUs on request (nor runs a namespace on the reserved
  CPUs: ``reserved-cpus`` and reserved namespaces are not in this trace, whose default
  settings reserve no CPU). Its table's metrics judge only the requests for exclusive CPUs
  alone (``simulate``'s own test: integer and isolated, not mixed or opted-out), for both
  policies; then one line per request kind says what each policy gave it.

Prints one table per machine (both policies, then deltas in points and ratios), then the issue's
targets for our policy, MET or MISSED with the measured value and the failing cases.

Run: ``nox -s bench-quality`` or ``python bench/quality.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time

from allocation_quality.cases import Case, run_case
from allocation_quality.machines import MACHINES, QUICK_MACHINES, describe
from allocation_quality.options import print_options
from allocation_quality.tables import HEADER, delta_row, pins_row, row
from allocation_quality.targets import targets
from allocation_quality.traces import build_traces

from cpuset_lab.machines import build_topology


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="300 events per trace on 3 machines (a smoke run)")
    parser.add_argument("--events", type=int, default=None, help="events per trace")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--machine", action="append", default=None,
                        help="only this machine (repeatable)")
    args = parser.parse_args()
    events = args.events or (300 if args.quick else 2000)
    chosen = args.machine or (list(QUICK_MACHINES) if args.quick else None)
    machines = [m for m in MACHINES if chosen is None or m.name in chosen]
    started = time.perf_counter()
    print(f"allocation quality, {events} events per trace, seed {args.seed}; "
          f"ours = the engine through `nri-cpuset simulate`'s replay, kubelet = packed "
          f"takeByTopology (bench/kubelet_baseline.py)")
    print("fail* = admission failures while enough CPUs were free; NUMA-sized = fragment "
          "trace's NUMA-sized requests placed in one node / admitted; (n) = eligible requests")
    cases: list[Case] = []
    for machine in machines:
        topology = build_topology(machine.shape)
        print(f"\n== {machine.name}: {describe(topology)} — {machine.note}")
        print(HEADER)
        for spec in build_traces(topology, events, args.seed):
            case = run_case(machine, topology, spec)
            cases.append(case)
            print(row(spec.name, "ours", case.ours))
            print(row("", "kubelet", case.kubelet))
            print(delta_row(case))
            if case.pins.pins:
                print(pins_row(case))
            for line in case.workloads:
                print(line)
        sys.stdout.flush()
    if not args.quick:
        print_options(machines, events, args.seed)
    print("\n== targets (our policy; the kubelet's value in brackets)")
    for target in targets(cases):
        print(f"[{'MET' if target.met else 'MISSED'}] {target.name}: {target.value} "
              f"[kubelet: {target.kubelet}]")
        for miss in target.misses:
            print(f"    below target: {miss}")
        if target.misses:
            print("    each case is analysed in docs/performance.md (\"The gaps, honestly\")")
    ours = sum(c.ours.seconds for c in cases)
    theirs = sum(c.kubelet.seconds for c in cases)
    print(f"\nwall time {time.perf_counter() - started:.1f} s (ours replay {ours:.1f} s, "
          f"kubelet replay {theirs:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
