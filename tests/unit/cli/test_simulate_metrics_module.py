"""The simulate metrics module on its own: the recorder, percentiles, threads per core and the
split-core tracker against a full recount.
"""

from __future__ import annotations

import random

import pytest

from cpuset_cli import placement_quality
from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    CPUSet,
    CpusetEngine,
    Ledger,
    PodFacts,
    Topology,
)
from cpuset_lab.machines import MachineShape, build_topology
from tests.unit.cli.simulate_traces import DUAL, EPYC

# -- the metrics module on its own -------------------------------------------------------------


def test_recorder_counts_spanning_and_split_placements_against_the_policy() -> None:
    recorder = placement_quality.QualityRecorder(DUAL)
    everything = DUAL.online
    recorder.request(2, everything, CPUSet((0, 4)))   # two nodes, two half cores
    recorder.request(2, everything, CPUSet((1, 9)))   # one node, one whole core
    recorder.request(4, everything, None)             # rejected with 16 free
    recorder.request(20, everything, None)            # rejected, could not fit
    summary = recorder.summary()
    assert summary.numa_confined == placement_quality.Ratio(1, 2, 50.0)
    assert summary.whole_core == placement_quality.Ratio(1, 2, 50.0)
    assert summary.failures_with_free_cpus == 1
    assert (summary.requests, summary.admitted, summary.rejected) == (4, 2, 2)


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([5.0], 50, 5.0), ([1.0, 2.0, 3.0, 4.0], 50, 2.0), ([1.0, 2.0, 3.0, 4.0], 99, 4.0),
    ([4.0, 1.0, 3.0, 2.0], 100, 4.0), (list(map(float, range(1, 101))), 99, 99.0),
])
def test_percentile_is_nearest_rank(values: list[float], q: float, expected: float) -> None:
    assert placement_quality.percentile(values, q) == expected


def test_percentile_refuses_no_values_and_bad_ranks() -> None:
    with pytest.raises(ValueError, match="no values"):
        placement_quality.percentile([], 50)
    with pytest.raises(ValueError, match="outside"):
        placement_quality.percentile([1.0], 0)


def test_threads_per_core_is_the_largest_online_core() -> None:
    shape = MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=2, threads_per_core=2,
                         offline=CPUSet((3,)))
    domains = placement_quality.Domains(build_topology(shape))
    assert domains.threads_per_core == 2
    assert domains.whole_cores(CPUSet((1,)))  # core 1/3 has only CPU 1 online


def _split_from_scratch(topology: Topology, ledger: Ledger) -> int:
    count = 0
    for core in topology.cores:
        owners = {ledger.int_owner.get(cpu)
                  or (placement_quality.PINNED_OWNER if cpu in ledger.pinned else None)
                  for cpu in core & topology.online}
        count += len(owners - {None}) > 1
    return count


def test_the_split_core_tracker_agrees_with_a_full_recount_on_a_random_mix() -> None:
    rng = random.Random(11)
    engine = CpusetEngine(EPYC)
    tracker = placement_quality.SplitCoreTracker(EPYC)
    live: list[str] = []
    for n in range(300):
        before = engine.ledger
        if live and rng.random() < 0.4:
            cid = live.pop(rng.randrange(len(live)))
            engine.commit(engine.plan_release(cid))
            tracker.assign(placement_quality.owner_changes(before, engine.ledger))
        else:
            cid = f"c{n}"
            if rng.random() < 0.2:
                first = rng.randrange(31)
                pod = PodFacts(sandbox_id=cid, namespace="t", name=cid,
                               annotations={"weka.io/cores-ids": f"{first}-{first + 1}"})
                facts = ContainerFacts(id=cid, sandbox_id=cid, name="c")
            else:
                pod = PodFacts(sandbox_id=cid, namespace="t", name=cid,
                               cgroup_parent=f"/kubepods/pod{cid}")
                request = rng.randint(1, 5)
                facts = ContainerFacts(id=cid, sandbox_id=cid, name="c",
                                       cpu_quota=request * 100_000, cpu_period=100_000)
            try:
                plan = engine.plan_create(pod, facts)
            except AdmissionError:  # a full machine: this add is skipped
                continue
            engine.commit(plan)
            live.append(cid)
            tracker.assign(placement_quality.owner_changes(before, engine.ledger,
                                                 (m.previous_cpus | m.cpus for m in plan.moves)))
        assert tracker.count == _split_from_scratch(EPYC, engine.ledger)
