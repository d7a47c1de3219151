"""The operator's allocation options, each replayed beside the default on the trace that shows
what it trades (full runs only; docs/allocation.md)."""

from __future__ import annotations

from collections.abc import Sequence

from allocation_quality.cases import outcome
from allocation_quality.machines import Machine
from allocation_quality.tables import HEADER, row
from allocation_quality.traces import build_traces
from cpuset_cli.simulate import Placed, Rejected, Simulation, replay
from cpuset_core import AllocationOptions, CPUSet, Settings, Spanning, Topology
from cpuset_lab.machines import build_topology

# The operator's options, each on the trace that shows what it trades (defaults above).
OPTION_RUNS: Sequence[tuple[str, str, Settings]] = (
    ("fragment", "+nodes", Settings(allocation=AllocationOptions(keep_free_numa_nodes=True))),
    ("numa-fill", "+spread",
     Settings(allocation=AllocationOptions(numa_spanning=Spanning.SPREAD))),
    ("churn", "+cores", Settings(allocation=AllocationOptions(full_physical_cores=True))),
)
OPTION_MACHINES = ("EPYC_LIKE", "EPYC_NPS4_256/L3=8", "XEON_384")


def _span_balance(topology: Topology, simulation: Simulation) -> str:
    """Requests placed over several NUMA nodes, and how uneven their shares were on average
    (largest minus smallest per-node share, in CPUs)."""
    gaps: list[int] = []
    for result in simulation.results:
        if not isinstance(result, Placed):
            continue
        cpus = CPUSet.parse(result.cpus)
        shares = [len(cpus & topology.cpus_of_numa(n)) for n in topology.numa_nodes_of(cpus)]
        if len(shares) > 1:
            gaps.append(max(shares) - min(shares))
    if not gaps:
        return "no spanning request"
    return f"{len(gaps)} spanning, share gap avg {sum(gaps) / len(gaps):.1f} CPUs"


def print_options(machines: Sequence[Machine], events: int, seed: int) -> None:
    print("\n== options (ours with one option set vs the default, same trace; "
          "docs/allocation.md)")
    print(HEADER + "  spanning layout / refusals")
    for machine in machines:
        if machine.name not in OPTION_MACHINES:
            continue
        topology = build_topology(machine.shape)
        specs = {spec.name: spec for spec in build_traces(topology, events, seed)}
        print(f"-- {machine.name}")
        for trace, label, settings in OPTION_RUNS:
            spec = specs[trace]
            for name, chosen in (("default", None), (label, settings)):
                sim = replay(topology, spec.events, settings=chosen)
                refused = sum(isinstance(r, Rejected) for r in sim.results)
                print(f"{row(trace, name, outcome(topology, spec, sim, 0.0))}  "
                      f"{_span_balance(topology, sim)}; "
                      f"{refused} refused")
