"""Moving integer containers off CPUs that a new pin claims."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import ContainerUpdate, Kind
from cpuset_core.policy.exclusive import (
    DEFAULT_OPTIONS,
    AllocationOptions,
    ExclusiveAllocator,
    WholeCoresUnavailableError,
)
from cpuset_core.policy.numa import bound_mems
from cpuset_core.topology import Topology


@dataclass(frozen=True, slots=True)
class Move:
    entry: Entry
    cpus: CPUSet


class NoRoomToMoveError(ValueError):
    """The conflicting containers cannot all be moved."""

    def __init__(self, conflicting: tuple[str, ...], needed: int, free: int,
                 detail: str = "") -> None:
        self.conflicting = conflicting
        self.needed = needed
        self.free = free
        self.detail = detail
        """Why, when counting free CPUs does not say it (whole-core mode)."""
        super().__init__(f"moving {len(conflicting)} container(s) needs {needed} CPUs, "
                         f"{free} free{f': {detail}' if detail else ''}")


def plan_moves(topology: Topology, allocator: ExclusiveAllocator, ledger: Ledger,
               pins: CPUSet, free: CPUSet, *,
               options: AllocationOptions = DEFAULT_OPTIONS,
               reuse_released: bool = True,
               eligible: Callable[[Entry], CPUSet] | None = None) -> tuple[Move, ...]:
    """Return new exclusive sets for every integer container holding a CPU in ``pins``.

    Each container either keeps its CPUs outside ``pins`` and gets replacements for the rest, or
    gets a fresh set when that shares fewer physical cores with other containers (sibling-aware:
    a moved latency-critical container should not end up on half-cores beside the pin), always
    from ``free − pins`` and preferring its own NUMA node(s) so it stays near the memory it has
    touched. Containers are handled in order of their lowest CPU, so the result is
    deterministic. With ``options.full_physical_cores`` a container keeps only the cores the
    pins leave whole and every replacement is a wholly free core. With ``reuse_released``
    false, CPUs one moved container leaves are not given to the next (its move may be dropped
    and it would still run there). ``eligible`` limits each container to the CPUs of its own
    kind (isolated ones for one that asked for them). Raises :class:`NoRoomToMoveError` when
    the replacements do not fit.
    """
    owners = sorted({ledger.int_owner[cpu] for cpu in pins & ledger.exclusive},
                    key=lambda cid: ledger.entries[cid].cpus.first())
    if not owners:
        return ()
    subjects = tuple(ledger.entries[c].subject for c in owners)
    available = free - pins
    whole = options.full_physical_cores

    def usable(cpus: CPUSet) -> CPUSet:
        return allocator.whole_core_cpus(cpus) if whole else cpus

    def to_replace(current: CPUSet) -> int:
        return len(current) - len(usable(current - pins))

    needed = sum(to_replace(ledger.entries[cid].cpus) for cid in owners)
    if needed > len(usable(available)):
        raise NoRoomToMoveError(subjects, needed, len(usable(available)))
    exclusive = ledger.exclusive
    moves: list[Move] = []
    for cid in owners:
        entry = ledger.entries[cid]
        needed -= to_replace(entry.cpus)
        others = exclusive - entry.cpus
        mine = available if eligible is None else available & eligible(entry)
        if to_replace(entry.cpus) > len(usable(mine)):
            raise NoRoomToMoveError(subjects, needed + to_replace(entry.cpus), len(usable(mine)),
                                    detail=f"{entry.subject}: too few free CPUs of its kind")
        try:
            cpus = _best_new_set(topology, allocator, entry.cpus, pins=pins,
                                 available=mine, others=others, reserve=needed,
                                 options=options, near=entry.near)
        except ValueError as exc:  # whole-core mode: the free whole cores do not add up
            detail = exc.detail if isinstance(exc, WholeCoresUnavailableError) else str(exc)
            raise NoRoomToMoveError(subjects, needed + to_replace(entry.cpus),
                                    len(usable(available)),
                                    detail=f"{entry.subject}: {detail}") from exc
        # Its unpinned CPUs that it did not keep are free again for the containers after it.
        released = entry.cpus - pins if reuse_released else EMPTY
        available = (available | released) - cpus
        exclusive = others | cpus
        moves.append(Move(entry, cpus))
    return tuple(moves)


def apply_moves(topology: Topology, ledger: Ledger, moves: Sequence[Move], pins: CPUSet, *,
                pinned_by: str) -> tuple[Ledger, tuple[ContainerUpdate, ...]]:
    """``ledger`` with every moved container on its new CPUs, and the live updates that move
    them off ``pins`` (the pin of ``pinned_by``). A container whose memory is bound gets the
    memory nodes of its new CPUs with them."""
    updates: list[ContainerUpdate] = []
    for move in moves:
        old = move.entry
        mems = old.mems if old.mems is None else bound_mems(topology, move.cpus) or old.mems
        ledger = ledger.with_entry(replace(old, cpus=move.cpus, mems=mems))  # replaces it
        updates.append(ContainerUpdate(
            container_id=old.container_id, subject=old.subject, kind=Kind.INTEGER,
            cpus=move.cpus, previous_cpus=old.cpus, mems=mems, previous_mems=old.mems,
            reason=f"moved off CPUs {old.cpus & pins} pinned by {pinned_by}"))
    return ledger, tuple(updates)


def _best_new_set(topology: Topology, allocator: ExclusiveAllocator, current: CPUSet, *,
                  pins: CPUSet, available: CPUSet, others: CPUSet, reserve: int,
                  options: AllocationOptions, near: CPUSet) -> CPUSet:
    """Return the better of "keep what is not pinned and top up" and "a fresh set": the one
    whose threads share fewer physical cores with anyone else; on a tie the top-up, which moves
    fewer CPUs. Both prefer the container's own NUMA node(s), and stay near its devices
    (``near``) when those nodes hold it. A fresh set is only taken if it leaves ``reserve``
    CPUs for the containers still to move."""
    keep = current - pins
    if options.full_physical_cores:
        keep = allocator.whole_core_cpus(keep)
    nodes = topology.numa_nodes_of(current)
    # Its own CPUs are not "another owner": a replacement beside them is the best place.
    top_up = _attempt(lambda: keep | allocator.take(
        available, len(current) - len(keep), exclusive=others, prefer_numa=nodes, near=near,
        options=options))
    pool = available | keep
    try:
        fresh: CPUSet | None = allocator.take(pool, len(current), exclusive=others,
                                              prefer_numa=nodes, near=near, options=options)
    except ValueError:  # whole-core mode: nothing adds up, its own cores included
        if top_up is None:
            raise
        fresh = None
    if fresh is not None and len(pool - fresh) < reserve:
        fresh = None  # it would starve the containers still to move
    if top_up is None or (fresh is not None and
                          _shared_cores(topology, fresh) < _shared_cores(topology, top_up)):
        if fresh is None:
            raise ValueError("whole cores for it would starve the containers still to move")
        return fresh
    return top_up


def _attempt(choose: Callable[[], CPUSet]) -> CPUSet | None:
    """The allocator's answer, or ``None`` when whole-core mode finds no cores adding up."""
    try:
        return choose()
    except ValueError:
        return None


def _shared_cores(topology: Topology, cpus: CPUSet) -> int:
    """How many of the physical cores ``cpus`` touches also hold threads outside ``cpus``."""
    return sum(1 for core in topology.cores_within(cpus)
               if not (core & topology.online).issubset(cpus))
