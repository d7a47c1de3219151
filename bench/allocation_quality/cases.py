"""One case: a trace replayed on one machine by both policies, and what each one measured."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from allocation_quality import workloads
from allocation_quality.machines import Machine
from allocation_quality.replay import kubelet, replay_with_allocator
from allocation_quality.traces import PinStats, TraceSpec
from cpuset_cli.placement_quality import Domains, Metrics
from cpuset_cli.simulate import Placed, Rejected, Simulation, replay
from cpuset_cli.trace import AddEvent, Event
from cpuset_core import CPUSet, Topology


@dataclass(frozen=True, slots=True)
class Outcome:
    metrics: Metrics
    probes: tuple[int, int]
    """NUMA-sized requests of the fragmentation trace placed inside one node, and admitted."""
    rejected_pins: int
    """Pinned adds refused (ours: when the containers on the pinned CPUs cannot be moved)."""
    seconds: float


@dataclass(frozen=True, slots=True)
class Case:
    machine: str
    trace: str
    ours: Outcome
    kubelet: Outcome
    pins: PinStats
    workloads: list[str]
    """The ``workloads`` trace's per-kind rows (empty for the other traces)."""


def _probes(topology: Topology, simulation: Simulation, probes: frozenset[int]) -> tuple[int,
                                                                                         int]:
    domains = Domains(topology)
    placed = [r for r in simulation.results if isinstance(r, Placed) and r.id in probes]
    inside = sum(domains.confined(domains.numa, CPUSet.parse(r.cpus)) for r in placed)
    return inside, len(placed)


def _rejected_pins(simulation: Simulation, events: Sequence[Event]) -> int:
    pinned = {e.id for e in events if isinstance(e, AddEvent) and e.pinned is not None}
    return sum(isinstance(r, Rejected) and r.id in pinned for r in simulation.results)


def outcome(topology: Topology, spec: TraceSpec, simulation: Simulation,
            seconds: float) -> Outcome:
    """What one policy's replay of ``spec`` measured."""
    return Outcome(simulation.metrics, _probes(topology, simulation, spec.probes),
                   _rejected_pins(simulation, spec.events), seconds)


def run_case(machine: Machine, topology: Topology, spec: TraceSpec) -> Case:
    start = time.perf_counter()
    ours = replay(topology, spec.events)
    middle = time.perf_counter()
    theirs = replay_with_allocator(topology, spec.events, kubelet(topology))
    end = time.perf_counter()
    kinds = (workloads.rows(workloads.ours(topology, spec.events, spec.kinds),
                            workloads.kubelet(topology, spec.events, theirs, spec.kinds))
             if spec.kinds else [])
    return Case(machine.name, spec.name, outcome(topology, spec, ours, middle - start),
                outcome(topology, spec, theirs, end - middle), spec.pins, kinds)
