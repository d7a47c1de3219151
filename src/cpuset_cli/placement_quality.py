"""Allocation quality metrics, as ``nri-cpuset simulate`` prints them (and the benchmark reuses).

Pure: no clock, no I/O. The caller feeds observations, one per event, and asks for a summary:

* :meth:`QualityRecorder.request` — one integer (exclusive) request: how many CPUs, the CPUs that
  were free for exclusive use just before it, and the CPUs it got (``None`` when rejected);
* :meth:`QualityRecorder.state` — the number of split cores after an event (kept up to date
  cheaply by :class:`SplitCoreTracker`);
* :meth:`QualityRecorder.decision` — how long one decision took, measured by the caller.

Definitions (``docs/cli.md``, section simulate, has the same text for operators). Every domain is
taken from the topology's real facts, restricted to online CPUs; "free" means free for an
exclusive request (online − pinned − exclusive − system-reserved − isolated unless allowed):

* **NUMA-confined %** — among admitted requests that *fit one NUMA node* (some node had at
  least ``request`` free CPUs just before the request), the share placed inside one node.
* **L3-confined %** — the same with last-level-cache groups.
* **whole-core %** — among admitted requests that are a multiple of the threads per core (the
  largest number of online threads of any core) and for which the free CPUs held at least
  ``request`` CPUs in fully free cores, the share made only of whole cores (every online thread
  of every core it touches is in the request).
* **split cores** — a core is split when its online threads belong to two different exclusive
  owners: each integer container is one owner, and all pinned (annotated) CPUs together are one
  more (the operator chose those; two pins sharing a core are not the allocator's doing).
  Reported as the average over the states after every event, and the maximum.
* **failures with free CPUs** — rejected requests for which at least ``request`` CPUs were free.
* **decision time** — p50 / p99 / max (nearest-rank percentiles) of the durations recorded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cpuset_core import CPUSet, Ledger, Topology

PINNED_OWNER = "<pinned>"
"""The owner every pinned (annotated) CPU belongs to, for split-core counting."""


@dataclass(frozen=True, slots=True)
class Ratio:
    """``met`` out of ``eligible``; ``percent`` is ``None`` when nothing was eligible."""

    met: int
    eligible: int
    percent: float | None


def ratio(met: int, eligible: int) -> Ratio:
    return Ratio(met, eligible, round(100 * met / eligible, 2) if eligible else None)


@dataclass(frozen=True, slots=True)
class SplitCores:
    time_average: float
    max: int


@dataclass(frozen=True, slots=True)
class DecisionTimes:
    """Milliseconds; ``None`` when no decision was recorded."""

    count: int
    p50: float | None
    p99: float | None
    max: float | None


@dataclass(frozen=True, slots=True)
class Metrics:
    """The summary of a run (its JSON form is the ``metrics`` object of ``simulate -o json``)."""

    events: int
    """Events seen (states recorded)."""
    requests: int
    """Integer requests seen (admitted + rejected)."""
    admitted: int
    rejected: int
    threads_per_core: int
    numa_confined: Ratio
    whole_core: Ratio
    l3_confined: Ratio
    split_cores: SplitCores
    failures_with_free_cpus: int
    decision_ms: DecisionTimes


def percentile(values: Sequence[float], q: float) -> float:
    """Return the nearest-rank ``q``-th percentile (0 < q <= 100) of non-empty ``values``."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q} is outside (0, 100]")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


class Domains:
    """The topology facts the metrics need, as bitmasks restricted to online CPUs."""

    def __init__(self, topology: Topology) -> None:
        online = topology.online.mask
        self.numa = _nonzero(topology.cpus_of_numa(n).mask & online for n in topology.numa_nodes)
        self.l3 = _nonzero(group.mask & online for group in topology.l3_groups)
        self.cores = _nonzero(core.mask & online for core in topology.cores)
        self.threads_per_core = max(core.bit_count() for core in self.cores)

    def fits_one(self, domains: Sequence[int], free: CPUSet, count: int) -> bool:
        """True when some domain has at least ``count`` free CPUs."""
        return any((free.mask & d).bit_count() >= count for d in domains)

    def confined(self, domains: Sequence[int], cpus: CPUSet) -> bool:
        """True when ``cpus`` lie inside one domain."""
        return any(not cpus.mask & ~d for d in domains)

    def whole_cores(self, cpus: CPUSet) -> bool:
        """True when every core ``cpus`` touches is entirely in ``cpus``."""
        mask = cpus.mask
        return all(core & mask in (0, core) for core in self.cores)

    def whole_core_eligible(self, free: CPUSet, count: int) -> bool:
        """True when ``count`` is a multiple of the threads per core and the fully free cores
        hold at least ``count`` CPUs."""
        if count % self.threads_per_core:
            return False
        mask = free.mask
        return sum(core.bit_count() for core in self.cores if core & mask == core) >= count


def _nonzero(masks: Iterable[int]) -> tuple[int, ...]:
    return tuple(m for m in masks if m)


class SplitCoreTracker:
    """Keeps the number of split cores up to date as CPUs change owner: O(changed CPUs)."""

    def __init__(self, topology: Topology) -> None:
        online = topology.online
        self._core_of: dict[int, int] = {}
        self._core_cpus: list[tuple[int, ...]] = []
        for index, core in enumerate(topology.cores):
            threads = tuple(core & online)
            self._core_cpus.append(threads)
            for cpu in threads:
                self._core_of[cpu] = index
        self._owner: dict[int, str] = {}
        self._split: set[int] = set()

    @property
    def count(self) -> int:
        """The number of split cores now."""
        return len(self._split)

    def assign(self, owners: Mapping[int, str | None]) -> None:
        """Record that each CPU now belongs to the given owner (``None``: to nobody)."""
        touched: set[int] = set()
        for cpu, owner in owners.items():
            if owner is None:
                self._owner.pop(cpu, None)
            else:
                self._owner[cpu] = owner
            core = self._core_of.get(cpu)
            if core is not None:
                touched.add(core)
        for core in touched:
            distinct = {self._owner[c] for c in self._core_cpus[core] if c in self._owner}
            if len(distinct) > 1:
                self._split.add(core)
            else:
                self._split.discard(core)


def owner_changes(before: Ledger, after: Ledger,
                  moved: Iterable[CPUSet] = ()) -> dict[int, str | None]:
    """Return the new owner of every CPU whose owner may have changed between two ledgers.

    ``moved`` are the old and new CPU sets of containers a plan moved (their CPUs can change
    owner without leaving the exclusive set). Integer CPUs are owned by their container, pinned
    ones by :data:`PINNED_OWNER`.
    """
    changed = (before.exclusive ^ after.exclusive) | (before.pinned ^ after.pinned)
    changed = changed | CPUSet.union_of(moved)
    owners = after.int_owner
    pinned = after.pinned
    return {cpu: owners.get(cpu) or (PINNED_OWNER if cpu in pinned else None) for cpu in changed}


@dataclass(slots=True)
class QualityRecorder:
    """Accumulates observations of one run; :meth:`summary` gives the :class:`Metrics`."""

    topology: Topology
    domains: Domains = field(init=False)
    _requests: int = 0
    _admitted: int = 0
    _numa: list[int] = field(default_factory=lambda: [0, 0])
    _l3: list[int] = field(default_factory=lambda: [0, 0])
    _whole: list[int] = field(default_factory=lambda: [0, 0])
    _failures_with_free: int = 0
    _split_sum: int = 0
    _split_max: int = 0
    _states: int = 0
    _durations_ns: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.domains = Domains(self.topology)

    def request(self, count: int, free: CPUSet, cpus: CPUSet | None) -> None:
        """Record one integer request of ``count`` CPUs, the CPUs free for it just before,
        and what it got (``None`` when it was rejected)."""
        self._requests += 1
        if cpus is None:
            self._failures_with_free += len(free) >= count
            return
        self._admitted += 1
        d = self.domains
        for tally, domains in ((self._numa, d.numa), (self._l3, d.l3)):
            if d.fits_one(domains, free, count):
                tally[1] += 1
                tally[0] += d.confined(domains, cpus)
        if d.whole_core_eligible(free, count):
            self._whole[1] += 1
            self._whole[0] += d.whole_cores(cpus)

    def state(self, split_cores: int) -> None:
        """Record the number of split cores after one event."""
        self._states += 1
        self._split_sum += split_cores
        self._split_max = max(self._split_max, split_cores)

    def decision(self, nanoseconds: int) -> None:
        """Record how long one decision took."""
        self._durations_ns.append(nanoseconds)

    def summary(self) -> Metrics:
        ms = [ns / 1e6 for ns in self._durations_ns]
        times = DecisionTimes(
            count=len(ms),
            p50=round(percentile(ms, 50), 3) if ms else None,
            p99=round(percentile(ms, 99), 3) if ms else None,
            max=round(max(ms), 3) if ms else None)
        average = self._split_sum / self._states if self._states else 0.0
        return Metrics(
            events=self._states, requests=self._requests, admitted=self._admitted,
            rejected=self._requests - self._admitted,
            threads_per_core=self.domains.threads_per_core,
            numa_confined=ratio(*self._numa), whole_core=ratio(*self._whole),
            l3_confined=ratio(*self._l3),
            split_cores=SplitCores(round(average, 3), self._split_max),
            failures_with_free_cpus=self._failures_with_free,
            decision_ms=times)
