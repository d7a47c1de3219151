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
the same CPUs. Step 2 lives in ``domain.py``, spanning in ``spanning.py``, the operator's
options in ``options.py``; this module fits the domain and says how.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.policy.domain import Domain, Take, take_threads
from cpuset_core.policy.options import (
    DEFAULT_OPTIONS,
    AllocationOptions,
    Spanning,
    WholeCoresUnavailableError,
)
from cpuset_core.policy.spanning import best_node_set, spread_take
from cpuset_core.topology import Topology

__all__ = ["DEFAULT_OPTIONS", "AllocationOptions", "Choice", "ExclusiveAllocator",
           "WholeCoresUnavailableError"]


@dataclass(frozen=True, slots=True)
class Choice:
    """The CPUs chosen for a request and how: the domain, and what kind of threads."""

    cpus: CPUSet
    domain: str
    whole_cores: int
    orphans: int
    beside_exclusive: int
    splits: int
    devices: str = ""
    """How it stands to the container's devices ("" without a device hint)."""

    def describe(self) -> str:
        """One line for logs and ``explain``."""
        parts = [f"{self.whole_cores} whole core(s)"]
        if self.orphans:
            parts.append(f"{self.orphans} orphan thread(s)"
                         + (f", {self.beside_exclusive} beside another exclusive container"
                            if self.beside_exclusive else ""))
        if self.splits:
            parts.append(f"{self.splits} split core(s)")
        near = f"{self.devices}: " if self.devices else ""
        return f"{near}{self.domain}: {', '.join(parts)}"


class _Scope(NamedTuple):
    """Where a choice is made: L3 groups, NUMA nodes and sockets (restricted to a device
    hint's nodes, or the whole machine's)."""

    l3: Sequence[Domain]
    numa: Sequence[Domain]
    sockets: Sequence[Domain]


def _choice(take: Take, domain: str) -> Choice:
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
        numa: list[Domain] = []
        l3: list[Domain] = []
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
        self._machine = _Scope(self._l3, self._numa, self._sockets)

    def _domain(self, level: int, order: int, node: int, socket: int, mask: int, *,
                node_mask: int, socket_mask: int) -> Domain:
        return Domain(level, order, node, socket, mask,
                       tuple(c & mask for c in self._cores if c & mask), node_mask, socket_mask)

    def whole_core_cpus(self, free: CPUSet) -> CPUSet:
        """The CPUs of ``free`` that lie in wholly free cores (every online thread free)."""
        mask = free.mask
        return CPUSet.from_mask(sum(core for core in self._cores if core & mask == core))

    def take(self, free: CPUSet, count: int, *, exclusive: CPUSet = EMPTY,
             prefer_numa: CPUSet | None = None, near: CPUSet = EMPTY,
             options: AllocationOptions = DEFAULT_OPTIONS) -> CPUSet:
        """Return ``count`` CPUs out of ``free`` (see :meth:`choose`)."""
        return self.choose(free, count, exclusive=exclusive, prefer_numa=prefer_numa,
                           near=near, options=options).cpus

    def choose(self, free: CPUSet, count: int, *, exclusive: CPUSet = EMPTY,
               prefer_numa: CPUSet | None = None, near: CPUSet = EMPTY,
               options: AllocationOptions = DEFAULT_OPTIONS) -> Choice:
        """Choose ``count`` CPUs out of ``free`` and say how.

        ``exclusive`` are CPUs owned by other exclusive containers (to keep new threads off their
        cores); ``prefer_numa`` names NUMA nodes to try first (a container being moved stays
        near its memory). ``near`` is a device hint: the NUMA nodes of the container's devices.
        When their free CPUs hold the request, the choice is made among them alone, by the same
        rules; otherwise over the whole machine, as without a hint (best effort). Raises
        ``ValueError`` when ``free`` has fewer than ``count`` CPUs, and
        :class:`WholeCoresUnavailableError` (a ``ValueError``) when ``options.full_physical_cores``
        is set and no set of wholly free cores adds up to ``count``.
        """
        if count <= 0:
            return Choice(cpus=EMPTY, domain="nothing requested", whole_cores=0, orphans=0,
                          beside_exclusive=0, splits=0)
        if free.mask.bit_count() < count:
            raise ValueError(f"{count} CPUs requested but only {len(free)} free")
        if near:
            aligned = self.near_devices(free, count, near, exclusive=exclusive,
                                        prefer_numa=prefer_numa, options=options)
            if isinstance(aligned, Choice):
                return aligned
            unaligned = self.choose(free, count, exclusive=exclusive, prefer_numa=prefer_numa,
                                    options=options)
            return replace(unaligned, devices=aligned)
        return self._choose(free, count, exclusive=exclusive, prefer_numa=prefer_numa,
                            options=options, scope=self._machine)

    def near_devices(self, free: CPUSet, count: int, near: CPUSet, *, exclusive: CPUSet = EMPTY,
                     prefer_numa: CPUSet | None = None,
                     options: AllocationOptions = DEFAULT_OPTIONS) -> Choice | str:
        """``count`` CPUs from the NUMA nodes ``near`` alone, or why they do not hold them.

        Within those nodes the rules are the whole machine's (L3, NUMA node, then the fewest
        of those nodes); a request larger than any one of them spans only them.
        """
        inside = [d for d in self._numa if d.node in near]
        mask = sum(d.mask for d in inside)
        within = CPUSet.from_mask(free.mask & mask)
        nodes = "NUMA node" + ("s" if len(near) > 1 else "")
        shortfall = f"its devices' {nodes} {near} hold only {len(within)} free CPU(s)"
        if len(within) < count:
            return shortfall
        l3 = tuple(d for d in self._l3 if d.node in near)
        sockets = tuple(replace(s, mask=s.mask & mask, cores=tuple(
            c & mask for c in s.cores if c & mask)) for s in self._sockets if s.mask & mask)
        try:
            chosen = self._choose(within, count, exclusive=exclusive, prefer_numa=prefer_numa,
                                  options=options, scope=_Scope(l3, tuple(inside), sockets))
        except WholeCoresUnavailableError as exc:
            return f"{shortfall}, not as whole cores ({exc.detail})"
        return replace(chosen, devices=f"near its devices ({nodes} {near})")

    def _choose(self, free: CPUSet, count: int, *, exclusive: CPUSet,
                prefer_numa: CPUSet | None, options: AllocationOptions, scope: _Scope) -> Choice:
        """The choice over ``scope``: the whole machine's domains, or those inside a device
        hint."""
        free_mask, others = free.mask, exclusive.mask
        if options.full_physical_cores:
            free_mask = self.whole_core_cpus(free).mask
            self._check_whole_cores(free_mask, count)
        levels: list[Sequence[Domain]] = [scope.l3, scope.numa]
        if options.keep_free_numa_nodes:
            # Domains in NUMA nodes something already uses first: a wholly free node stays
            # whole for a later NUMA-sized request, at the price of L3 confinement.
            def untouched(d: Domain) -> bool:
                return d.node_mask & free_mask == d.node_mask
            in_use: list[Sequence[Domain]] = [[d for d in level if not untouched(d)]
                                               for level in levels]
            levels = in_use + [[d for d in level if untouched(d)] for level in levels]
        if prefer_numa is not None:
            levels[:0] = [[d for d in level if d.node in prefer_numa] for level in levels]
        for domains in levels:
            found = _best_fit(domains, free_mask, count, others, whole=options.full_physical_cores)
            if found is not None:
                domain, take = found
                return _choice(take, _describe(domain, free_mask))
        return self._spanning(free_mask, count, others, options, scope=scope)

    def _check_whole_cores(self, free_whole: int, count: int) -> None:
        size = self._uniform_core_size
        if size > 1 and count % size:
            raise WholeCoresUnavailableError(
                count, f"{count} is not a multiple of the {size} threads per core")
        available = free_whole.bit_count()
        if available < count:
            raise WholeCoresUnavailableError(
                count, f"only {available} free CPU(s) lie in wholly free cores")

    def _spanning(self, free: int, count: int, exclusive: int, options: AllocationOptions, *,
                  scope: _Scope) -> Choice:
        """Take from several of ``scope``'s NUMA nodes (``spanning.py``): its sockets that
        hold the request (else all its nodes) are the scopes; the best node set is laid out
        packed or spread as the options say."""
        fitting = [s for s in scope.sockets if s.free_in(free) >= count]
        scopes = [[d for d in scope.numa if d.socket == s.socket] for s in fitting] or \
            [list(scope.numa)]
        strict = options.alignment.strict
        if strict and fitting:
            scopes.append(list(scope.numa))  # the fewest nodes may lie across sockets
        found = best_node_set(scopes, free, count, exclusive, whole=options.full_physical_cores,
                              nodes_first=strict)
        if found is None:
            # Only whole-core mode rejects candidates; the caller checked the free count.
            raise WholeCoresUnavailableError(count, "no choice of wholly free cores adds up "
                                                    "to it")
        chosen, take = found
        spread = options.numa_spanning is Spanning.SPREAD
        if spread:
            even = spread_take(chosen, free, count, exclusive, self._uniform_core_size)
            if not (options.full_physical_cores and (even.splits or even.orphans)):
                take = even
        nodes = CPUSet(d.node for d in chosen)
        spanned = {d.socket for d in chosen}
        where = (f"NUMA nodes {nodes} of socket {chosen[0].socket}" if len(spanned) == 1
                 else f"NUMA nodes {nodes} across sockets")
        layout = ", spread evenly" if spread and len(chosen) > 1 else ""
        return _choice(take, f"{where}{layout} (no single NUMA node holds {count})")


def _describe(domain: Domain, free: int) -> str:
    available = domain.free_in(free)
    if domain.level == 0:
        return (f"L3 group {CPUSet.from_mask(domain.mask)} of NUMA node {domain.node} "
                f"(best fit, {available} free)")
    return f"NUMA node {domain.node} (best fit, {available} free)"


def _best_fit(domains: Sequence[Domain], free: int, count: int, exclusive: int, *,
              whole: bool) -> tuple[Domain, Take] | None:
    best: tuple[tuple[int, ...], Domain, Take] | None = None
    for domain in domains:
        available = domain.free_in(free)
        if available < count:
            continue
        take = take_threads(domain.cores, free, count, exclusive)
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
