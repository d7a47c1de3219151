"""Requests no single NUMA node holds: which nodes to span, and how to lay the CPUs out.

Every socket that holds the request (else the whole machine) is a candidate scope; in each, a few
node sets are gathered (by whole-core capacity, then by free CPUs, each with and without the
tightest last node) and ranked like single domains: clean take, fewest nodes, fewest cores,
best fit. At most four sets per socket, one pass over their cores each, so 16+ NUMA nodes stay
cheap. ``spread`` keeps the winning node set and divides the CPUs evenly over it.
"""

from __future__ import annotations

from collections.abc import Sequence

from cpuset_core.policy.domain import Domain, Take, take_threads


def best_node_set(scopes: Sequence[Sequence[Domain]], free: int, count: int, exclusive: int, *,
                  whole: bool, nodes_first: bool = False) -> tuple[list[Domain], Take] | None:
    """The best-ranked node set over ``scopes`` and its packed take; ``None`` when ``whole``
    (whole-core mode) rules every candidate out. ``nodes_first``: the fewest nodes outrank a
    clean take (a strict alignment policy refuses more nodes than needed)."""
    best: tuple[tuple[int, ...], list[Domain], Take] | None = None
    for scope in scopes:
        for chosen in node_sets(scope, free, count):
            # Nodes are chosen by the packed take in both layouts, so spreading never costs
            # an extra node; the spread layout is applied to the winner afterwards.
            take = take_threads(tuple(c for node in chosen for c in node.cores), free, count,
                                exclusive)
            if whole and (take.splits or take.orphans):
                continue
            # Under a strict alignment policy the fewest nodes outrank a clean take.
            key = (len(chosen) if nodes_first else 0, take.splits, take.beside_exclusive,
                   len(chosen), take.cores_touched, sum(d.free_in(free) for d in chosen),
                   chosen[0].order)
            if best is None or key < best[0]:
                best = (key, chosen, take)
    return None if best is None else (best[1], best[2])


def node_sets(scope: Sequence[Domain], free: int, count: int) -> list[list[Domain]]:
    """Candidate node sets in ``scope`` holding ``count`` free CPUs: nodes gathered by
    whole-core capacity (then free CPUs), with and without the last node swapped for the
    tightest one that still covers the rest."""
    # Free counts looked up many times in the sort keys and loops below: computed once.
    counts = {id(d): d.free_in(free) for d in scope}

    def free_in(domain: Domain) -> int:
        return counts[id(domain)]

    def whole(domain: Domain) -> int:
        return sum(c.bit_count() for c in domain.cores if c & free == c)

    usable = [d for d in scope if free_in(d)]
    if sum(free_in(d) for d in usable) < count:
        return []
    candidates: list[list[Domain]] = []
    for order in (lambda d: (-whole(d), -free_in(d), d.order),
                  lambda d: (-free_in(d), d.order)):
        nodes = sorted(usable, key=order)
        chosen: list[Domain] = []
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


def spread_take(nodes: Sequence[Domain], free: int, count: int, exclusive: int,
                 unit: int) -> Take:
    """Take ``count`` CPUs from ``nodes`` in shares as even as whole cores allow: every node
    gets the same number of cores' worth (``unit`` threads each), the remainder going to the
    nodes with the most free CPUs, each share capped by what the node has free."""
    unit = max(unit, 1)
    capacity = [node.free_in(free) for node in nodes]
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
    total = Take(0, 0, 0, 0, 0)
    for node, share in zip(nodes, shares, strict=True):
        if share:
            part = take_threads(node.cores, free, share, exclusive)
            total = Take(total.mask | part.mask, total.splits + part.splits,
                          total.beside_exclusive + part.beside_exclusive,
                          total.cores_touched + part.cores_touched, total.orphans + part.orphans)
    return total
