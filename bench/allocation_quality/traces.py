"""The benchmark's traces (``churn``, ``fragment``, ``numa-fill``, ``pinned``, ``workloads``),
written for one machine from a seed; ``bench/quality.py``'s docstring says what each one does."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from allocation_quality.replay import AllocatorReplay, EngineStepper, kubelet
from cpuset_cli.trace import AddEvent, DelEvent, Event, parse_trace
from cpuset_core import EMPTY, CPUSet, Settings, Topology
from cpuset_core.policy.shared import exclusive_free

FILL = 0.85
PIN_SHARE = 0.10

INTEGER, MIXED, OPTED_OUT, ISOLATED = "integer", "mixed", "opted-out", "isolated"
WORKLOAD_KINDS = (INTEGER, MIXED, OPTED_OUT, ISOLATED)
"""The ``workloads`` trace's request kinds, in the order they are reported."""
WORKLOAD_ANNOTATIONS: Mapping[str, Mapping[str, str]] = {
    INTEGER: {},
    MIXED: {"mixed-cpus.nri-cpuset.io/pod": "true"},
    OPTED_OUT: {"shared-cpus.nri-cpuset.io/pod": "true"},
    ISOLATED: {"isolated-cpus.nri-cpuset.io/pod": "true"},
}
WORKLOAD_SHARES = ((MIXED, 0.20), (OPTED_OUT, 0.15), (ISOLATED, 0.10))
"""How often an add of the ``workloads`` trace is of each kind (the rest: plain integer)."""
FRACTIONS = (250, 500, 750)


@dataclass
class Trace:
    """A trace being written. ``observers`` see every event as it is added (the ``pinned`` trace
    steps both policies with them); ``probes`` are the fragmentation trace's NUMA-sized
    requests (reported separately)."""

    capacity: int
    limit: int
    rng: random.Random
    observers: Sequence[Callable[[Event], None]] = ()
    events: list[dict[str, object]] = field(default_factory=list)
    requests: dict[int, int] = field(default_factory=dict)
    pins: dict[int, CPUSet] = field(default_factory=dict)
    pin_refs: dict[int, int] = field(default_factory=dict)
    probes: set[int] = field(default_factory=set)
    kinds: dict[int, str] = field(default_factory=dict)
    """The ``workloads`` trace's adds and their kind (empty for the other traces)."""
    next_id: int = 0

    @property
    def live(self) -> list[int]:
        return [*self.requests, *self.pins]

    def used(self, extra_pins: CPUSet = EMPTY) -> int:
        """Requested CPUs plus distinct pinned ones (with ``extra_pins`` added)."""
        pinned = len(self.pin_refs) + sum(1 for cpu in extra_pins if cpu not in self.pin_refs)
        return sum(self.requests.values()) + pinned

    def fits(self, request: int, *, limit: int | None = None) -> bool:
        """Within the fill limit, or alone on the machine (small machines)."""
        bound = self.limit if limit is None else limit
        if not self.live:
            return request <= self.capacity
        return self.used() + request <= bound

    def _emit(self, document: dict[str, object], event: Event) -> None:
        self.events.append(document)
        for observer in self.observers:
            observer(event)

    def add(self, request: int) -> int:
        ident = self.next_id
        self.next_id += 1
        self.requests[ident] = request
        self._emit({"op": "add", "id": ident, "request": request},
                   AddEvent(len(self.events), ident, request))
        return ident

    def add_workload(self, kind: str, whole: int, fraction: int = 0) -> int:
        """A ``kind`` container asking for ``whole`` CPUs (plus ``fraction`` millicores, given
        as ``millis``). It counts as ``whole`` CPUs against the fill limit whatever its kind:
        the kubelet gives exclusive CPUs to an opted-out or isolated one too, so both policies
        stay under the limit."""
        ident = self.next_id
        self.next_id += 1
        self.requests[ident] = whole
        self.kinds[ident] = kind
        annotations = dict(WORKLOAD_ANNOTATIONS[kind])
        document: dict[str, object] = {"op": "add", "id": ident}
        if fraction:
            document["millis"] = 1000 * whole + fraction
        else:
            document["request"] = whole
        if annotations:
            document["annotations"] = annotations
        self._emit(document, AddEvent(len(self.events), ident, None if fraction else whole,
                                      millis=1000 * whole + fraction if fraction else None,
                                      annotations=annotations))
        return ident

    def add_pin(self, cpus: CPUSet) -> None:
        ident = self.next_id
        self.next_id += 1
        self.pins[ident] = cpus
        for cpu in cpus:
            self.pin_refs[cpu] = self.pin_refs.get(cpu, 0) + 1
        self._emit({"op": "add", "id": ident, "pinned": cpus.format()},
                   AddEvent(len(self.events), ident, None, cpus))

    def delete(self, ident: int) -> None:
        if ident in self.requests:
            del self.requests[ident]
            self.kinds.pop(ident, None)
        else:
            for cpu in self.pins.pop(ident):
                self.pin_refs[cpu] -= 1
                if not self.pin_refs[cpu]:
                    del self.pin_refs[cpu]
        self._emit({"op": "del", "id": ident}, DelEvent(len(self.events), ident))

    def delete_random(self) -> None:
        self.delete(self.rng.choice(self.live))


@dataclass(frozen=True, slots=True)
class PinStats:
    """Pinned adds of the ``pinned`` trace, and how many landed on or beside (same core) a CPU
    an integer container held at that moment, under each policy."""

    pins: int = 0
    beside_ours: int = 0
    beside_kubelet: int = 0
    on_ours: int = 0
    """Pins on a CPU an integer container held: our engine moves that container."""
    on_kubelet: int = 0
    """The same for the kubelet, which leaves the container and the pin sharing the CPU."""


@dataclass(frozen=True, slots=True)
class TraceSpec:
    name: str
    events: tuple[Event, ...]
    probes: frozenset[int] = frozenset()
    pins: PinStats = PinStats()
    kinds: Mapping[int, str] = field(default_factory=dict)
    """The ``workloads`` trace's adds and their kind (every add, deleted or not)."""


def _capacity(topology: Topology) -> tuple[CPUSet, int]:
    """The CPUs exclusive requests may use, and the most of them in one NUMA node."""
    usable = exclusive_free(topology, EMPTY, Settings())
    per_node = max(len(usable & topology.cpus_of_numa(n)) for n in topology.numa_nodes)
    return usable, per_node


def _log_uniform(rng: random.Random, most: int) -> int:
    return min(most, max(1, round(2 ** rng.uniform(0, 5))))


def _churn(trace: Trace, n: int, draw: Callable[[], int],
           pin: Callable[[], CPUSet] | None = None) -> None:
    rng = trace.rng
    while len(trace.events) < n:
        if pin is not None and rng.random() < PIN_SHARE:
            cpus = pin()
            if (not trace.live or rng.random() < 0.55) and trace.used(cpus) <= trace.limit:
                trace.add_pin(cpus)
            elif trace.live:
                trace.delete_random()
            continue
        request = draw()
        if (not trace.live or rng.random() < 0.55) and trace.fits(request):
            trace.add(request)
        elif trace.live:
            trace.delete_random()


def _fragment(trace: Trace, n: int, odd: Sequence[int], big: int) -> None:
    rng = trace.rng
    while len(trace.events) < n:
        while len(trace.events) < n and trace.fits(request := rng.choice(odd)):
            trace.add(request)
        live = sorted(trace.requests)
        for ident in rng.sample(live, (len(live) + 1) // 2):
            trace.delete(ident)
        if len(trace.events) + 2 <= n and trace.fits(big, limit=trace.capacity):
            ident = trace.add(big)
            trace.probes.add(ident)
            trace.delete(ident)


def _workloads(trace: Trace, n: int, draw: Callable[[], int], isolated: int) -> dict[int, str]:
    """Churn of plain integer, mixed, opted-out and (with ``isolated`` CPUs) isolated
    requests; returns every add's kind."""
    rng = trace.rng
    shares = [(kind, share) for kind, share in WORKLOAD_SHARES if kind != ISOLATED or isolated]
    kinds: dict[int, str] = {}
    while len(trace.events) < n:
        roll, kind = rng.random(), INTEGER
        for candidate, share in shares:
            if roll < share:
                kind = candidate
                break
            roll -= share
        # Isolated requests are sized for the few isolated CPUs a node has, and kept within
        # them, so that a refusal measures the policy, not an impossible trace.
        whole = rng.randint(1, isolated) if kind == ISOLATED else draw()
        fraction = rng.choice(FRACTIONS) if kind == MIXED else 0
        live_isolated = sum(trace.requests[i] for i, k in trace.kinds.items() if k == ISOLATED)
        room = kind != ISOLATED or live_isolated + whole <= isolated
        if (not trace.live or rng.random() < 0.55) and room and trace.fits(whole):
            kinds[trace.add_workload(kind, whole, fraction)] = kind
        elif trace.live:
            trace.delete_random()
    return kinds


class _PinChooser:
    """Chooses the CPUs of a pinned add from the live state of both policies."""

    def __init__(self, topology: Topology, usable: CPUSet, rng: random.Random) -> None:
        self.topology = topology
        self.rng = rng
        self.cores = [(core & usable).mask for core in topology.cores if core & usable]
        self.ours = EngineStepper(topology)
        self.kubelet = AllocatorReplay(topology, kubelet(topology))
        self.stats = PinStats()

    def observe(self, event: Event) -> None:
        if isinstance(event, AddEvent) and event.pinned is not None:
            pins, ours, theirs = event.pinned, self.ours.exclusive, self.kubelet.exclusive
            s = self.stats
            self.stats = PinStats(s.pins + 1,
                                  s.beside_ours + self._beside(pins, ours),
                                  s.beside_kubelet + self._beside(pins, theirs),
                                  s.on_ours + bool(pins.mask & ours),
                                  s.on_kubelet + bool(pins.mask & theirs))
        self.ours.apply(event)
        self.kubelet.apply(event)

    def _beside(self, cpus: CPUSet, exclusive: int) -> bool:
        return any(self.topology.core_cpus(cpu).mask & exclusive for cpu in cpus)

    def choose(self) -> CPUSet:
        ours, theirs = self.ours.exclusive, self.kubelet.exclusive
        both = [c for c in self.cores if c & ours and c & theirs]
        either = both or [c for c in self.cores if c & (ours | theirs)] or self.cores
        picked = self.rng.sample(either, min(len(either), self.rng.choice((1, 2))))
        # The last thread of each core: with SMT, the sibling of the core's first thread.
        return CPUSet.from_mask(sum(1 << (c.bit_length() - 1) for c in picked))


def build_traces(topology: Topology, n: int, seed: int) -> list[TraceSpec]:
    usable, per_node = _capacity(topology)
    capacity = len(usable)
    limit = math.floor(FILL * capacity)
    most = max(1, min(32, capacity // 2))
    odd = [r for r in (1, 3, 5, 7) if r <= most] or [1]
    big = per_node if len(topology.numa_nodes) > 1 else max(1, capacity // 2)

    def new(offset: int, observers: Sequence[Callable[[Event], None]] = ()) -> Trace:
        return Trace(capacity=capacity, limit=limit, rng=random.Random(seed * 100 + offset),
                     observers=observers)

    churn = new(1)
    _churn(churn, n, lambda: _log_uniform(churn.rng, most))
    frag = new(2)
    _fragment(frag, n, odd, big)
    sizes = [s for s in (per_node - 1, per_node, per_node + 1) if 1 <= s <= capacity]
    fill = new(3)
    _churn(fill, n, lambda: fill.rng.choice(sizes))
    chooser = _PinChooser(topology, usable, random.Random(seed * 100 + 5))
    pinned = new(4, [chooser.observe])
    _churn(pinned, n, lambda: _log_uniform(pinned.rng, most), pin=chooser.choose)
    pin_stats = chooser.stats
    mixed = new(6)
    kinds = _workloads(mixed, n, lambda: _log_uniform(mixed.rng, most),
                       len(topology.isolated & topology.online))
    specs = [TraceSpec(name, parse_trace({"events": trace.events}, source=name),
                       frozenset(trace.probes), stats)
             for name, trace, stats in (("churn", churn, PinStats()),
                                        ("fragment", frag, PinStats()),
                                        ("numa-fill", fill, PinStats()),
                                        ("pinned", pinned, pin_stats))]
    specs.append(TraceSpec("workloads", parse_trace({"events": mixed.events},
                                                    source="workloads"), kinds=kinds))
    return specs
