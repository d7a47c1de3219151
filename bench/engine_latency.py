"""Engine decision latency on a 1024-CPU machine with 1000 live containers (mixed kinds).

Prints p50/p99/max of the create and remove decisions (plan + commit, including building the
live-update list for every shared container) and of a full synchronize, against the targets
(create p99 < 1 ms, synchronize < 100 ms), plus a baseline measured in the same run: the same
exclusive takes done the naive way (Python sets, first fit, like the seed design's map-based
allocator), so the figures can be compared across machines as ratios.

Run: ``nox -s bench`` or ``python bench/engine_latency.py [--quick]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable

from cpuset_core import ContainerFacts, CpusetEngine, PodFacts, Topology
from cpuset_lab.machines import BIG_1024, build_topology

PERIOD = 100_000
CREATE_P99_TARGET_MS = 1.0
SYNC_TARGET_MS = 100.0


def _pod(n: int, kind: str, pins: str = "") -> PodFacts:
    parent = "/kubepods/burstable/pod{}" if kind == "shared" else "/kubepods/pod{}"
    annotations = {"weka.io/cores-ids": pins} if pins else {}
    return PodFacts(sandbox_id=f"s{n}", namespace="bench", name=f"p{n}",
                    cgroup_parent=parent.format(n), annotations=annotations)


def _container(n: int, cpus: int | None) -> ContainerFacts:
    return ContainerFacts(id=f"c{n}", sandbox_id=f"s{n}", name="main",
                          cpu_quota=None if cpus is None else cpus * PERIOD,
                          cpu_period=None if cpus is None else PERIOD)


def _populate(engine: CpusetEngine, rng: random.Random, live: int) -> list[tuple[PodFacts,
                                                                               ContainerFacts]]:
    """Admit ``live`` containers: 60 % shared, 30 % integer (1-2 CPUs), 10 % pinned (sharing
    a 64-CPU region in groups of 4)."""
    admitted = []
    for n in range(live):
        roll = n % 10
        if roll < 6:
            pod, facts = _pod(n, "shared"), _container(n, None)
        elif roll < 9:
            pod, facts = _pod(n, "integer"), _container(n, rng.choice([1, 2]))
        else:
            first = 960 + 4 * (n // 10 % 16)
            pod, facts = _pod(n, "pinned", f"{first}-{first + 3}"), _container(n, None)
        engine.commit(engine.plan_create(pod, facts))
        admitted.append((pod, facts))
    return admitted


def _percentiles(samples_ns: list[int]) -> tuple[float, float, float]:
    ordered = sorted(samples_ns)
    p50 = ordered[len(ordered) // 2] / 1e6
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1e6
    return p50, p99, ordered[-1] / 1e6


def _time(fn: Callable[[], object]) -> int:
    start = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - start


def _churn(engine: CpusetEngine, rounds: int,
           rng: random.Random) -> tuple[list[int], list[int], list[int]]:
    """Create and remove one container per round; return decision times (plan + commit), the
    time to build the per-container update list of each create, and remove decision times."""
    creates: list[int] = []
    materialize: list[int] = []
    removes: list[int] = []
    for r in range(rounds):
        n = 100_000 + r
        kind = ("shared", "integer", "integer", "pinned")[r % 4]
        if kind == "pinned":
            first = 960 + 4 * rng.randrange(16)
            pod, facts = _pod(n, kind, f"{first}-{first + 1}"), _container(n, None)
        else:
            pod, facts = _pod(n, kind), _container(n, rng.choice([1, 2, 4]) if kind == "integer"
                                                   else None)
        start = time.perf_counter_ns()
        plan = engine.plan_create(pod, facts)
        engine.commit(plan)
        creates.append(time.perf_counter_ns() - start)
        materialize.append(_time(lambda p=plan: p.updates))
        removes.append(_time(lambda f=facts: engine.commit(engine.plan_release(f.id))))
    return creates, materialize, removes


def _naive_decisions(topology: Topology, engine: CpusetEngine, rounds: int,
                     rng: random.Random) -> list[int]:
    """The baseline: the seed design's decision done naively with maps and sets — rebuild the
    reserved set from ``annotRef``/``intOwner`` maps, first-fit with a sibling pass, and one
    update record per shared container."""
    ledger = engine.ledger
    annot_ref = dict(ledger.annot_refs)
    int_owner = dict(ledger.int_owner)
    online = set(topology.online)
    shared_ids = list(ledger.shared_ids())
    siblings = {cpu: set(topology.siblings(cpu)) for cpu in online}
    samples = []
    for _ in range(rounds):
        count = rng.choice([1, 2, 4])

        def decide(n: int = count) -> list[dict[str, object]]:
            reserved = {c for c, k in annot_ref.items() if k > 0} | set(int_owner)
            free = sorted(online - reserved)
            chosen: list[int] = []
            for cpu in free:
                if len(chosen) >= n:
                    break
                if cpu not in chosen:
                    chosen.append(cpu)
                    chosen.extend(s for s in sorted(siblings[cpu]) if s in free and len(chosen) < n)
            pool = sorted(online - reserved - set(chosen))
            return [{"id": cid, "cpus": pool} for cid in shared_ids]

        samples.append(_time(decide))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (for smoke runs)")
    args = parser.parse_args()
    rounds = 200 if args.quick else 2000
    rng = random.Random(7)
    topology = build_topology(BIG_1024)
    engine = CpusetEngine(topology)
    admitted = _populate(engine, rng, 1000)
    ledger = engine.ledger
    print(f"machine: {len(topology.online)} CPUs, {len(topology.numa_nodes)} NUMA nodes; "
          f"live containers: {len(ledger)} ({ledger.shared_count} shared, "
          f"{len(set(ledger.int_owner.values()))} integer, "
          f"{len(ledger) - ledger.shared_count - len(set(ledger.int_owner.values()))} pinned); "
          f"exclusive CPUs {len(ledger.exclusive)}, pinned {len(ledger.pinned)}")

    creates, materialize, removes = _churn(engine, rounds, rng)
    reported = [ContainerFacts(id=f.id, sandbox_id=f.sandbox_id, name=f.name,
                               cpu_quota=f.cpu_quota, cpu_period=f.cpu_period,
                               cpus=str(p.cpus) if (p := engine.placement(f.id)) else "")
                for _, f in admitted]
    pods = [pod for pod, _ in admitted]
    syncs = [_time(lambda: engine.plan_synchronize(pods, reported)) for _ in range(20)]
    baseline = _naive_decisions(topology, engine, rounds, rng)
    with_updates = [a + b for a, b in zip(creates, materialize, strict=True)]

    rows = [("create decision", creates),
            ("  + build all updates", with_updates),
            ("remove decision", removes),
            ("synchronize 1000", syncs),
            ("baseline: naive decision", baseline)]
    print(f"{'operation':<26}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, samples in rows:
        p50, p99, worst = _percentiles(samples)
        print(f"{name:<26}{p50:>10.3f}{p99:>10.3f}{worst:>10.3f}")
    create_p99 = _percentiles(creates)[1]
    sync_p99 = _percentiles(syncs)[1]
    print(f"create decision p99 {create_p99:.3f} ms vs target {CREATE_P99_TARGET_MS} ms: "
          f"{'MET' if create_p99 < CREATE_P99_TARGET_MS else 'MISSED'}")
    print(f"synchronize p99 {sync_p99:.1f} ms vs target {SYNC_TARGET_MS} ms: "
          f"{'MET' if sync_p99 < SYNC_TARGET_MS else 'MISSED'}")
    base_p50 = statistics.median(baseline)
    print(f"ratio (create + all updates) p50 / naive decision p50: "
          f"{statistics.median(with_updates) / base_p50:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
