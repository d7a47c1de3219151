"""The ``workloads`` trace: what each policy did for each request kind, and where the kubelet
has no equivalent."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from allocation_quality.traces import INTEGER, ISOLATED, MIXED, OPTED_OUT, WORKLOAD_KINDS
from cpuset_cli.simulate import Placed, Simulation, facts_for
from cpuset_cli.trace import AddEvent, DelEvent, Event
from cpuset_core import AdmissionError, CPUSet, CpusetEngine, Topology

KUBELET_NOTE = {
    INTEGER: "same request",
    MIXED: "no equivalent: a fractional limit gets no exclusive CPU, it is shared",
    OPTED_OUT: "no equivalent: a whole-CPU Guaranteed container gets exclusive CPUs anyway",
    ISOLATED: "no equivalent: the static policy never gives isolated CPUs on request",
}


@dataclass
class Tally:
    requests: int = 0
    placed: int = 0
    exclusive: int = 0
    """Exclusive CPUs given, summed over placed containers."""
    on_pool: int = 0
    """Placed containers that run on the shared pool (alone or beside exclusive CPUs)."""
    isolated: int = 0
    """Exclusive CPUs given that are isolated ones."""


def ours(topology: Topology, events: Sequence[Event],
         kinds: Mapping[int, str]) -> dict[str, Tally]:
    """Our engine stepped through the trace (as ``simulate`` replays it), reading each
    placement's exclusive part from the ledger, which the replay's results do not give."""
    engine = CpusetEngine(topology)
    tallies = {kind: Tally() for kind in WORKLOAD_KINDS}
    for event in events:
        if isinstance(event, DelEvent):
            engine.commit(engine.plan_release(str(event.id)))
            continue
        tally = tallies[kinds[event.id]]
        tally.requests += 1
        with contextlib.suppress(AdmissionError):
            plan = engine.plan_create(*facts_for(event, engine.settings))
            engine.commit(plan)
            assert plan.placement is not None
            own = plan.placement.cpus & engine.ledger.exclusive
            tally.placed += 1
            tally.exclusive += len(own)
            tally.isolated += len(own & topology.isolated)
            tally.on_pool += own != plan.placement.cpus
    return tallies


def kubelet(topology: Topology, events: Sequence[Event], simulation: Simulation,
            kinds: Mapping[int, str]) -> dict[str, Tally]:
    """The kubelet baseline's replay of the trace, from its results."""
    placed = {r.id: CPUSet.parse(r.cpus, allow_empty=True)
              for r in simulation.results if isinstance(r, Placed)}
    tallies = {kind: Tally() for kind in WORKLOAD_KINDS}
    for event in events:
        if not isinstance(event, AddEvent):
            continue
        tally = tallies[kinds[event.id]]
        tally.requests += 1
        if event.id in placed:
            cpus = placed[event.id]
            tally.placed += 1
            tally.exclusive += len(cpus)
            tally.isolated += len(cpus & topology.isolated)
            tally.on_pool += not cpus
    return tallies


def rows(ours_: Mapping[str, Tally], theirs: Mapping[str, Tally]) -> list[str]:
    lines = []
    for kind in WORKLOAD_KINDS:
        a, b = ours_[kind], theirs[kind]
        if not a.requests:
            continue
        lines.append(f"{'':<10} {kind} ({a.requests} adds): ours {a.placed} placed, "
                     f"{a.exclusive} exclusive CPUs ({a.isolated} isolated), {a.on_pool} on "
                     f"the pool; kubelet {b.placed} placed, {b.exclusive} exclusive CPUs, "
                     f"{b.on_pool} on the pool ({KUBELET_NOTE[kind]})")
    return lines
