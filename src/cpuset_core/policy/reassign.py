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

    Each container keeps its CPUs outside ``pins`` and gets replacements for the rest from
    ``free − pins``, on its own NUMA node(s) when they have room: the fewest CPUs move, and the
    container stays near memory it has already touched. Containers are handled in order of
    their lowest CPU, so the result is deterministic. Raises :class:`NoRoomToMoveError` when
    the replacements do not fit.
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
        keep = entry.cpus - pins
        # Its own CPUs are not "another owner": a replacement beside them is the best place.
        replacement = allocator.take(available, len(entry.cpus & pins),
                                     exclusive=exclusive - entry.cpus,
                                     prefer_numa=topology.numa_nodes_of(entry.cpus))
        available -= replacement
        exclusive |= replacement
        moves.append(Move(entry, keep | replacement))
    return tuple(moves)
