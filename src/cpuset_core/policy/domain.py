"""A domain a request may be confined to, and the threads a request takes inside one.

Inside a domain: whole free cores for as much of the request as they cover (a container that
owns whole cores has no foreign sibling); the remainder on orphan threads (free threads whose
core-mate is already taken), preferring orphans whose mate is not another exclusive container;
only then does it split a whole free core. One pass over the domain's cores with integer
bitmask operations; ties break on core order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cpuset_core.cpuset import lowest_bits

_ORPHAN_NEXT_TO_NON_EXCLUSIVE = 0
_ORPHAN_NEXT_TO_EXCLUSIVE = 1
_SPLIT_WHOLE_CORE = 2


@dataclass(frozen=True, slots=True)
class Domain:
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

    def free_in(self, free: int) -> int:
        """How many of ``free``'s CPUs lie in this domain."""
        return (free & self.mask).bit_count()


@dataclass(frozen=True, slots=True)
class Take:
    mask: int
    splits: int
    beside_exclusive: int
    cores_touched: int
    orphans: int


def take_threads(cores: Sequence[int], free: int, count: int, exclusive: int) -> Take:
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
    return Take(taken, splits, beside, touched, orphans)


def _fit_rank(available: int, remaining: int) -> int:
    """Best fit: a core whose free threads cover the remainder exactly comes first, then ones
    that cover it with the least left over, then ones that only cover part (largest first)."""
    size = available.bit_count()
    return size - remaining if size >= remaining else 1000 - size
