"""Choosing N exclusive CPUs for an integer container: fit a topology domain, then pick threads.

1. **Fit first.** Domains are tried from the smallest level up: L3 group (within one NUMA node),
   NUMA node, socket. At the first level where some domain's free CPUs hold the whole request,
   each fitting domain is scored by the take it would produce (cores split, threads placed next
   to another exclusive owner, cores touched), then by its free CPU count (best fit keeps big
   holes intact), then by position. When no NUMA node holds the request, it spans several: each
   socket that holds it (else the machine) offers a few node sets, gathered by whole-core
   capacity or by free CPUs, and the sets are ranked the same way (clean take, then fewest
   nodes, fewest cores, best fit).
2. **Then choose threads** inside the domain: whole free cores for as much of the request as
   they cover (a container that owns whole cores has no foreign sibling); the remainder on
   orphan threads (free threads whose core-mate is already taken), preferring orphans whose mate
   is not another exclusive container; only then does it split a whole free core.

Every step is a pass over the domain's cores with integer bitmask operations: O(CPUs) per
decision and no enumeration of subsets. Ties break on CPU order, so the same inputs always give
the same CPUs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cpuset_core.cpuset import EMPTY, CPUSet, lowest_bits
from cpuset_core.topology import Topology

_ORPHAN_NEXT_TO_NON_EXCLUSIVE = 0
_ORPHAN_NEXT_TO_EXCLUSIVE = 1
_SPLIT_WHOLE_CORE = 2


@dataclass(frozen=True, slots=True)
class _Domain:
    """A set of CPUs the request may be confined to, with its cores as bitmasks."""

    level: int
    order: int
    node: int
    socket: int
    mask: int
    cores: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Take:
    mask: int
    splits: int
    beside_exclusive: int
    cores_touched: int
    orphans: int


@dataclass(frozen=True, slots=True)
class Choice:
    """The CPUs chosen for a request and how: the domain, and what kind of threads."""

    cpus: CPUSet
    domain: str
    whole_cores: int
    orphans: int
    beside_exclusive: int
    splits: int

    def describe(self) -> str:
        """One line for logs and ``explain``."""
        parts = [f"{self.whole_cores} whole core(s)"]
        if self.orphans:
            parts.append(f"{self.orphans} orphan thread(s)"
                         + (f", {self.beside_exclusive} beside another exclusive container"
                            if self.beside_exclusive else ""))
        if self.splits:
            parts.append(f"{self.splits} split core(s)")
        return f"{self.domain}: {', '.join(parts)}"


def _choice(take: _Take, domain: str) -> Choice:
    return Choice(cpus=CPUSet.from_mask(take.mask), domain=domain,
                  whole_cores=take.cores_touched - take.orphans - take.splits,
                  orphans=take.orphans, beside_exclusive=take.beside_exclusive,
                  splits=take.splits)


class ExclusiveAllocator:
    """Allocation of exclusive CPUs on one topology; build once, call :meth:`take` per request."""

    def __init__(self, topology: Topology) -> None:
        online = topology.online.mask
        self._cores = tuple(m for m in (core.mask & online for core in topology.cores) if m)
        numa: list[_Domain] = []
        l3: list[_Domain] = []
        for node in topology.numa_nodes:
            node_mask = topology.cpus_of_numa(node).mask & online
            if not node_mask:
                continue
            socket = topology.info((node_mask & -node_mask).bit_length() - 1).socket
            numa.append(self._domain(1, node, node, socket, node_mask))
            for group in topology.l3_groups:
                part = group.mask & node_mask
                if part and part != node_mask:
                    l3.append(self._domain(0, len(l3), node, socket, part))
        self._l3 = tuple(l3)
        self._numa = tuple(numa)
        self._sockets = tuple(
            self._domain(2, s, -1, s, topology.cpus_of_socket(s).mask & online)
            for s in topology.sockets if topology.cpus_of_socket(s).mask & online)

    def _domain(self, level: int, order: int, node: int, socket: int, mask: int) -> _Domain:
        return _Domain(level, order, node, socket, mask,
                       tuple(c & mask for c in self._cores if c & mask))

    def take(self, free: CPUSet, count: int, *, exclusive: CPUSet = EMPTY,
             prefer_numa: CPUSet | None = None) -> CPUSet:
        """Return ``count`` CPUs out of ``free`` (see :meth:`choose`)."""
        return self.choose(free, count, exclusive=exclusive, prefer_numa=prefer_numa).cpus

    def choose(self, free: CPUSet, count: int, *, exclusive: CPUSet = EMPTY,
               prefer_numa: CPUSet | None = None) -> Choice:
        """Choose ``count`` CPUs out of ``free`` and say how.

        ``exclusive`` are CPUs owned by other exclusive containers (to keep new threads off their
        cores); ``prefer_numa`` names NUMA nodes to try first (a container being moved stays
        near its memory). Raises ``ValueError`` when ``free`` has fewer than ``count`` CPUs.
        """
        if count <= 0:
            return Choice(cpus=EMPTY, domain="nothing requested", whole_cores=0, orphans=0,
                          beside_exclusive=0, splits=0)
        free_mask, others = free.mask, exclusive.mask
        if free_mask.bit_count() < count:
            raise ValueError(f"{count} CPUs requested but only {len(free)} free")
        levels: list[Sequence[_Domain]] = [self._l3, self._numa]
        if prefer_numa is not None:
            levels[:0] = [[d for d in level if d.node in prefer_numa] for level in levels]
        for domains in levels:
            found = _best_fit(domains, free_mask, count, others)
            if found is not None:
                domain, take = found
                return _choice(take, _describe(domain, free_mask))
        return self._spanning(free_mask, count, others)

    def _spanning(self, free: int, count: int, exclusive: int) -> Choice:
        """Take from several NUMA nodes: every socket that holds the request (else the whole
        machine) is a candidate scope; within one, nodes are gathered by whole-core capacity,
        then free CPUs, until they hold the request. Candidates are ranked like single domains
        — clean takes first, then fewest nodes, fewest cores, best fit — so a spanning request
        gets whole cores whenever some choice of nodes allows it."""
        def free_in(domain: _Domain) -> int:
            return (free & domain.mask).bit_count()

        fitting = [s for s in self._sockets if free_in(s) >= count]
        scopes = [[d for d in self._numa if d.socket == s.socket] for s in fitting] or \
            [list(self._numa)]
        best: tuple[tuple[int, ...], list[_Domain], _Take] | None = None
        for scope in scopes:
            for chosen in _node_sets(scope, free, count):
                cores = tuple(c for node in chosen for c in node.cores)
                take = _take_threads(cores, free, count, exclusive)
                gathered = sum(free_in(d) for d in chosen)
                key = (take.splits, take.beside_exclusive, len(chosen), take.cores_touched,
                       gathered, chosen[0].order)
                if best is None or key < best[0]:
                    best = (key, chosen, take)
        assert best is not None  # the caller checked that enough CPUs are free
        _, chosen, take = best
        nodes = CPUSet(d.node for d in chosen)
        sockets = {d.socket for d in chosen}
        where = (f"NUMA nodes {nodes} of socket {chosen[0].socket}" if len(sockets) == 1
                 else f"NUMA nodes {nodes} across sockets")
        return _choice(take, f"{where} (no single NUMA node holds {count})")


def _node_sets(scope: Sequence[_Domain], free: int, count: int) -> list[list[_Domain]]:
    """Candidate node sets in ``scope`` holding ``count`` free CPUs: nodes gathered by
    whole-core capacity (then free CPUs), with and without the last node swapped for the
    tightest one that still covers the rest."""
    def free_in(domain: _Domain) -> int:
        return (free & domain.mask).bit_count()

    def whole(domain: _Domain) -> int:
        return sum(c.bit_count() for c in domain.cores if c & free == c)

    usable = [d for d in scope if free_in(d)]
    if sum(free_in(d) for d in usable) < count:
        return []
    candidates: list[list[_Domain]] = []
    for order in (lambda d: (-whole(d), -free_in(d), d.order),
                  lambda d: (-free_in(d), d.order)):
        nodes = sorted(usable, key=order)
        chosen: list[_Domain] = []
        gathered = 0
        for node in nodes:
            chosen.append(node)
            gathered += free_in(node)
            if gathered >= count:
                break
        candidates.append(chosen)
        needed = count - (gathered - free_in(chosen[-1]))
        rest = [d for d in nodes[len(chosen) - 1:] if free_in(d) >= needed]
        tight = min(rest, key=lambda d: (free_in(d), d.order))
        if tight is not chosen[-1]:
            candidates.append([*chosen[:-1], tight])
    return candidates


def _describe(domain: _Domain, free: int) -> str:
    available = (free & domain.mask).bit_count()
    if domain.level == 0:
        return (f"L3 group {CPUSet.from_mask(domain.mask)} of NUMA node {domain.node} "
                f"(best fit, {available} free)")
    return f"NUMA node {domain.node} (best fit, {available} free)"


def _best_fit(domains: Sequence[_Domain], free: int, count: int,
              exclusive: int) -> tuple[_Domain, _Take] | None:
    best: tuple[tuple[int, int, int, int, int], _Domain, _Take] | None = None
    for domain in domains:
        available = (free & domain.mask).bit_count()
        if available < count:
            continue
        take = _take_threads(domain.cores, free, count, exclusive)
        # Quality of the take first (no split core, no foreign exclusive sibling, fewest cores),
        # then best fit, then position.
        key = (take.splits, take.beside_exclusive, take.cores_touched, available, domain.order)
        if best is None or key < best[0]:
            best = (key, domain, take)
    return None if best is None else (best[1], best[2])


def _take_threads(cores: Sequence[int], free: int, count: int, exclusive: int) -> _Take:
    """Pick ``count`` threads from ``cores`` (bitmasks of online threads): whole free cores first,
    then orphan threads, then split whole cores. ``free`` must hold enough of them."""
    whole: list[tuple[int, int]] = []
    partial: list[tuple[int, int, int]] = []
    for rank, core in enumerate(cores):
        available = core & free
        if not available:
            continue
        if available == core:
            whole.append((rank, available))
        else:
            mate_class = (_ORPHAN_NEXT_TO_EXCLUSIVE if core & exclusive
                          else _ORPHAN_NEXT_TO_NON_EXCLUSIVE)
            partial.append((mate_class, rank, available))
    # Biggest cores first: a core with an offline sibling must not take half of a pair and
    # force the other half to split a full core.
    whole.sort(key=lambda item: (-item[1].bit_count(), item[0]))
    taken, remaining, touched = 0, count, 0
    unused_whole: list[tuple[int, int]] = []
    for rank, core in whole:
        size = core.bit_count()
        if remaining and size <= remaining:
            taken |= core
            remaining -= size
            touched += 1
        else:
            unused_whole.append((rank, core))
    splits = beside = orphans = 0
    if remaining:
        candidates = [(cls, _fit_rank(m, remaining), rank, m) for cls, rank, m in partial]
        candidates += [(_SPLIT_WHOLE_CORE, _fit_rank(m, remaining), rank, m)
                       for rank, m in unused_whole]
        candidates.sort()
        for cls, _fit, _rank, available in candidates:
            picked = lowest_bits(available, remaining)
            taken |= picked
            remaining -= picked.bit_count()
            touched += 1
            splits += cls == _SPLIT_WHOLE_CORE
            beside += cls == _ORPHAN_NEXT_TO_EXCLUSIVE
            orphans += cls != _SPLIT_WHOLE_CORE
            if not remaining:
                break
    return _Take(taken, splits, beside, touched, orphans)


def _fit_rank(available: int, remaining: int) -> int:
    """Best fit: a core whose free threads cover the remainder exactly comes first, then ones
    that cover it with the least left over, then ones that only cover part (largest first)."""
    size = available.bit_count()
    return size - remaining if size >= remaining else 1000 - size

