"""The quality benchmark's ``workloads`` trace: seeded, of every kind the machine allows, each
kind written as ``simulate`` reads it, and the kubelet baseline treating each as it would."""

from __future__ import annotations

from allocation_quality.replay import kubelet, replay_with_allocator
from allocation_quality.traces import ISOLATED, MIXED, OPTED_OUT, TraceSpec, build_traces
from allocation_quality.workloads import kubelet as kubelet_tally

from cpuset_cli.trace import AddEvent
from cpuset_core import Topology
from cpuset_lab.machines import DUAL_SOCKET_HT, OFFLINE_ISOLATED, MachineShape, build_topology


def _workloads(shape: MachineShape, seed: int = 5) -> tuple[Topology, TraceSpec]:
    topology = build_topology(shape)
    return topology, next(s for s in build_traces(topology, 200, seed) if s.name == "workloads")


def test_the_trace_is_seeded() -> None:
    _, a = _workloads(DUAL_SOCKET_HT)
    _, b = _workloads(DUAL_SOCKET_HT)
    _, c = _workloads(DUAL_SOCKET_HT, seed=6)
    assert a.events == b.events
    assert dict(a.kinds) == dict(b.kinds)
    assert a.events != c.events


def test_each_kind_is_written_as_simulate_reads_it() -> None:
    _, spec = _workloads(OFFLINE_ISOLATED)
    adds = {e.id: e for e in spec.events if isinstance(e, AddEvent)}
    assert set(adds) == set(spec.kinds)
    assert {MIXED, OPTED_OUT, ISOLATED} <= set(spec.kinds.values())
    for ident, kind in spec.kinds.items():
        event = adds[ident]
        if kind == MIXED:
            assert event.millis is not None
            assert event.millis % 1000
            assert event.millis >= 1000
            assert event.annotations == {"mixed-cpus.nri-cpuset.io/pod": "true"}
        elif kind == OPTED_OUT:
            assert event.annotations == {"shared-cpus.nri-cpuset.io/pod": "true"}
        elif kind == ISOLATED:
            assert event.request is not None
            assert event.request <= 2


def test_no_isolated_request_where_the_machine_has_none() -> None:
    _, spec = _workloads(DUAL_SOCKET_HT)
    assert ISOLATED not in set(spec.kinds.values())


def test_the_kubelet_shares_mixed_and_pins_opted_out() -> None:
    topology, spec = _workloads(OFFLINE_ISOLATED)
    sim = replay_with_allocator(topology, spec.events, kubelet(topology))
    tallies = kubelet_tally(topology, spec.events, sim, spec.kinds)
    assert tallies[MIXED].exclusive == 0
    assert tallies[MIXED].on_pool == tallies[MIXED].placed
    assert tallies[OPTED_OUT].exclusive > 0
    assert tallies[OPTED_OUT].on_pool == 0
    assert tallies[ISOLATED].isolated == 0
