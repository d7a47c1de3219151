"""Moving integer containers off CPUs that a new pin claims."""

from __future__ import annotations

from dataclasses import dataclass

from cpuset_core.cpuset import CPUSet
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.topology import Topology


@dataclass(frozen=True, slots=True)
class Move:
    entry: Entry
    cpus: CPUSet


class NoRoomToMoveError(ValueError):
    """The conflicting containers cannot all be moved."""

    def __init__(self, conflicting: tuple[str, ...], needed: int, free: int) -> None:
        self.conflicting = conflicting
        self.needed = needed
        self.free = free
        super().__init__(f"moving {len(conflicting)} container(s) needs {needed} CPUs, "
                         f"{free} free")


def plan_moves(topology: Topology, allocator: ExclusiveAllocator, ledger: Ledger,
               pins: CPUSet, free: CPUSet) -> tuple[Move, ...]:
    """Return new exclusive sets for every integer container holding a CPU in ``pins``.

    Each container either keeps its CPUs outside ``pins`` and gets replacements for the rest, or
    gets a fresh set when that shares fewer physical cores with other containers (sibling-aware:
    a moved latency-critical container should not end up on half-cores beside the pin), always
    from ``free − pins`` and preferring its own NUMA node(s) so it stays near the memory it has
    touched. Containers are handled in order of their lowest CPU, so the result is
    deterministic. Raises :class:`NoRoomToMoveError` when the replacements do not fit.
    """
    owners = sorted({ledger.int_owner[cpu] for cpu in pins & ledger.exclusive},
                    key=lambda cid: ledger.entries[cid].cpus.first())
    if not owners:
        return ()
    available = free - pins
    needed = sum(len(ledger.entries[cid].cpus & pins) for cid in owners)
    if needed > len(available):
        raise NoRoomToMoveError(tuple(ledger.entries[c].subject for c in owners), needed,
                                len(available))
    exclusive = ledger.exclusive
    moves: list[Move] = []
    for cid in owners:
        entry = ledger.entries[cid]
        needed -= len(entry.cpus & pins)
        others = exclusive - entry.cpus
        cpus = _best_new_set(topology, allocator, entry.cpus, pins=pins, available=available,
                             others=others, reserve=needed)
        # Its unpinned CPUs that it did not keep are free again for the containers after it.
        available = (available | (entry.cpus - pins)) - cpus
        exclusive = others | cpus
        moves.append(Move(entry, cpus))
    return tuple(moves)


def _best_new_set(topology: Topology, allocator: ExclusiveAllocator, current: CPUSet, *,
                  pins: CPUSet, available: CPUSet, others: CPUSet, reserve: int) -> CPUSet:
    """Return the better of "keep what is not pinned and top up" and "a fresh set": the one
    whose threads share fewer physical cores with anyone else; on a tie the top-up, which moves
    fewer CPUs. Both prefer the container's own NUMA node(s). A fresh set is only taken if it
    leaves ``reserve`` CPUs for the containers still to move."""
    keep = current - pins
    nodes = topology.numa_nodes_of(current)
    # Its own CPUs are not "another owner": a replacement beside them is the best place.
    top_up = keep | allocator.take(available, len(current & pins), exclusive=others,
                                   prefer_numa=nodes)
    pool = available | keep
    fresh = allocator.take(pool, len(current), exclusive=others, prefer_numa=nodes)
    if (len(pool - fresh) >= reserve
            and _shared_cores(topology, fresh) < _shared_cores(topology, top_up)):
        return fresh
    return top_up


def _shared_cores(topology: Topology, cpus: CPUSet) -> int:
    """How many of the physical cores ``cpus`` touches also hold threads outside ``cpus``."""
    return sum(1 for core in topology.cores_within(cpus)
               if not (core & topology.online).issubset(cpus))
