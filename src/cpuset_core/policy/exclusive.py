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
from cpuset_core.settings import Settings, Spanning
from cpuset_core.topology import Topology

_ORPHAN_NEXT_TO_NON_EXCLUSIVE = 0
_ORPHAN_NEXT_TO_EXCLUSIVE = 1
_SPLIT_WHOLE_CORE = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationOptions:
    """The operator's allocation options (from :class:`Settings`)."""

    whole_cores: bool = False
    """Only wholly free physical cores, and only requests they add up to exactly."""
    spanning: Spanning = Spanning.PACK
    keep_free_numa_nodes: bool = False
    """Prefer domains in NUMA nodes already in use, even over L3 confinement."""

    @classmethod
    def from_settings(cls, settings: Settings) -> AllocationOptions:
        return cls(whole_cores=settings.full_physical_cores, spanning=settings.spanning,
                   keep_free_numa_nodes=settings.keep_free_numa_nodes)


DEFAULT_OPTIONS = AllocationOptions()


class WholeCoresUnavailableError(ValueError):
    """Whole-core mode: no set of wholly free cores adds up to the request."""

    def __init__(self, count: int, detail: str) -> None:
        self.count = count
        self.detail = detail
        super().__init__(f"{count} CPU(s) as whole cores: {detail}")


@dataclass(frozen=True, slots=True)
class _Domain:
    """A set of CPUs the request may be confined to, with its cores as bitmasks."""

    level: int
    order: int
    node: int
    socket: int
    mask: int
    cores: tuple[int, ...]
    node_mask: int
    """The NUMA node the domain lies in (itself for a node; 0 for a socket)."""
    socket_mask: int


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
        sizes = {core.bit_count() for core in self._cores}
        self._uniform_core_size = sizes.pop() if len(sizes) == 1 else 0
        numa: list[_Domain] = []
        l3: list[_Domain] = []
        for node in topology.numa_nodes:
            node_mask = topology.cpus_of_numa(node).mask & online
            if not node_mask:
                continue
            socket = topology.info((node_mask & -node_mask).bit_length() - 1).socket
            socket_mask = topology.cpus_of_socket(socket).mask & online
            numa.append(self._domain(1, node, node, socket, node_mask, node_mask=node_mask,
                                     socket_mask=socket_mask))
            for group in topology.l3_groups:
                part = group.mask & node_mask
                if part and part != node_mask:
                    l3.append(self._domain(0, len(l3), node, socket, part,
                                           node_mask=node_mask, socket_mask=socket_mask))
        self._l3 = tuple(l3)
        self._numa = tuple(numa)
        self._sockets = tuple(
            self._domain(2, s, -1, s, mask, node_mask=0, socket_mask=mask)
            for s in topology.sockets if (mask := topology.cpus_of_socket(s).mask & online))

    def _domain(self, level: int, order: int, node: int, socket: int, mask: int, *,
                node_mask: int, socket_mask: int) -> _Domain:
        return _Domain(level, order, node, socket, mask,
                       tuple(c & mask for c in self._cores if c & mask), node_mask, socket_mask)

    def whole_core_cpus(self, free: CPUSet) -> CPUSet:
        """The CPUs of ``free`` that lie in wholly free cores (every online thread free)."""
        mask = free.mask
        return CPUSet.from_mask(sum(core for core in self._cores if core & mask == core))

    def take(self, free: CPUSet, count: int, *, exclusive: CPUSet = EMPTY,
             prefer_numa: CPUSet | None = None,
             options: AllocationOptions = DEFAULT_OPTIONS) -> CPUSet:
        """Return ``count`` CPUs out of ``free`` (see :meth:`choose`)."""
        return self.choose(free, count, exclusive=exclusive, prefer_numa=prefer_numa,
                           options=options).cpus

    def choose(self, free: CPUSet, count: int, *, exclusive: CPUSet = EMPTY,
               prefer_numa: CPUSet | None = None,
               options: AllocationOptions = DEFAULT_OPTIONS) -> Choice:
        """Choose ``count`` CPUs out of ``free`` and say how.

        ``exclusive`` are CPUs owned by other exclusive containers (to keep new threads off their
        cores); ``prefer_numa`` names NUMA nodes to try first (a container being moved stays
        near its memory). Raises ``ValueError`` when ``free`` has fewer than ``count`` CPUs, and
        :class:`WholeCoresUnavailableError` (a ``ValueError``) when ``options.whole_cores``
        is set and no set of wholly free cores adds up to ``count``.
        """
        if count <= 0:
            return Choice(cpus=EMPTY, domain="nothing requested", whole_cores=0, orphans=0,
                          beside_exclusive=0, splits=0)
        if free.mask.bit_count() < count:
            raise ValueError(f"{count} CPUs requested but only {len(free)} free")
        free_mask, others = free.mask, exclusive.mask
        if options.whole_cores:
            free_mask = self.whole_core_cpus(free).mask
            self._check_whole_cores(free_mask, count)
        levels: list[Sequence[_Domain]] = [self._l3, self._numa]
        if options.keep_free_numa_nodes:
            # Domains in NUMA nodes something already uses first: a wholly free node stays
            # whole for a later NUMA-sized request, at the price of L3 confinement.
            def untouched(d: _Domain) -> bool:
                return d.node_mask & free_mask == d.node_mask
            in_use: list[Sequence[_Domain]] = [[d for d in level if not untouched(d)]
                                               for level in levels]
            levels = in_use + [[d for d in level if untouched(d)] for level in levels]
        if prefer_numa is not None:
            levels[:0] = [[d for d in level if d.node in prefer_numa] for level in levels]
        for domains in levels:
            found = _best_fit(domains, free_mask, count, others, whole=options.whole_cores)
            if found is not None:
                domain, take = found
                return _choice(take, _describe(domain, free_mask))
        return self._spanning(free_mask, count, others, options)

    def _check_whole_cores(self, free_whole: int, count: int) -> None:
        size = self._uniform_core_size
        if size > 1 and count % size:
            raise WholeCoresUnavailableError(
                count, f"{count} is not a multiple of the {size} threads per core")
        available = free_whole.bit_count()
        if available < count:
            raise WholeCoresUnavailableError(
                count, f"only {available} free CPU(s) lie in wholly free cores")

    def _spanning(self, free: int, count: int, exclusive: int,
                  options: AllocationOptions) -> Choice:
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
        spread = options.spanning is Spanning.SPREAD
        best: tuple[tuple[int, ...], list[_Domain], _Take] | None = None
        for scope in scopes:
            for chosen in _node_sets(scope, free, count):
                # Nodes are chosen by the packed take in both modes, so spreading never costs
                # an extra node; the spread layout is applied to the winner below.
                take = _take_threads(tuple(c for node in chosen for c in node.cores), free,
                                     count, exclusive)
                if options.whole_cores and (take.splits or take.orphans):
                    continue
                gathered = sum(free_in(d) for d in chosen)
                key = (take.splits, take.beside_exclusive, len(chosen), take.cores_touched,
                       gathered, chosen[0].order)
                if best is None or key < best[0]:
                    best = (key, chosen, take)
        if best is None:
            # Only whole-core mode rejects candidates; the caller checked the free count.
            raise WholeCoresUnavailableError(count, "no choice of wholly free cores adds up "
                                                    "to it")
        _, chosen, take = best
        if spread:
            even = _spread_take(chosen, free, count, exclusive, self._uniform_core_size)
            if not (options.whole_cores and (even.splits or even.orphans)):
                take = even
        nodes = CPUSet(d.node for d in chosen)
        sockets = {d.socket for d in chosen}
        where = (f"NUMA nodes {nodes} of socket {chosen[0].socket}" if len(sockets) == 1
                 else f"NUMA nodes {nodes} across sockets")
        layout = ", spread evenly" if spread and len(chosen) > 1 else ""
        return _choice(take, f"{where}{layout} (no single NUMA node holds {count})")


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


def _best_fit(domains: Sequence[_Domain], free: int, count: int, exclusive: int, *,
              whole: bool) -> tuple[_Domain, _Take] | None:
    best: tuple[tuple[int, ...], _Domain, _Take] | None = None
    for domain in domains:
        available = (free & domain.mask).bit_count()
        if available < count:
            continue
        take = _take_threads(domain.cores, free, count, exclusive)
        if whole and (take.splits or take.orphans):
            continue  # its whole free cores do not add up to the request
        # Quality of the take first (no split core, no foreign exclusive sibling, fewest cores),
        # then best fit at every level up: the fullest NUMA node, then the fullest socket, then
        # the tightest domain. Among equally clean takes, cutting into the emptiest node would
        # break up room a later NUMA-sized request needs.
        key = (take.splits, take.beside_exclusive, take.cores_touched,
               (free & domain.node_mask).bit_count(), (free & domain.socket_mask).bit_count(),
               available, domain.order)
        if best is None or key < best[0]:
            best = (key, domain, take)
    return None if best is None else (best[1], best[2])


def _spread_take(nodes: Sequence[_Domain], free: int, count: int, exclusive: int,
                 unit: int) -> _Take:
    """Take ``count`` CPUs from ``nodes`` in shares as even as whole cores allow: every node
    gets the same number of cores' worth (``unit`` threads each), the remainder going to the
    nodes with the most free CPUs, each share capped by what the node has free."""
    unit = max(unit, 1)
    capacity = [(free & node.mask).bit_count() for node in nodes]
    shares = [0] * len(nodes)
    remaining = count
    # Water-filling in whole-core units (then single threads for a remainder below a unit):
    # each round gives one unit to every node that still has room, most free first.
    order = sorted(range(len(nodes)), key=lambda i: (-capacity[i], nodes[i].order))
    # A remainder below a whole core goes first to nodes with a free orphan thread (a core
    # whose mate is taken), so that evening out the shares does not split a whole core.
    orphaned = sorted(order, key=lambda i: not any(
        (core & free) and (core & free) != core for core in nodes[i].cores))
    step = unit
    while remaining:
        progressed = False
        for i in (order if step > 1 else orphaned):
            grant = min(step, remaining, capacity[i] - shares[i])
            if grant <= 0 or (step > 1 and grant < step and remaining >= step):
                continue
            shares[i] += grant
            remaining -= grant
            progressed = True
            if not remaining:
                break
        if not progressed:
            if step == 1:
                break  # cannot happen: the node set holds ``count`` free CPUs
            step = 1
    total = _Take(0, 0, 0, 0, 0)
    for node, share in zip(nodes, shares, strict=True):
        if share:
            part = _take_threads(node.cores, free, share, exclusive)
            total = _Take(total.mask | part.mask, total.splits + part.splits,
                          total.beside_exclusive + part.beside_exclusive,
                          total.cores_touched + part.cores_touched, total.orphans + part.orphans)
    return total


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

