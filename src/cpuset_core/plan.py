"""A plan: what a change would do, computed without changing anything."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import AdmissionError
from cpuset_core.ledger import Ledger
from cpuset_core.model import ContainerUpdate, Kind, Placement
from cpuset_core.topology import Topology


@dataclass(frozen=True, slots=True)
class PoolChange:
    """Every listed container on the shared pool moves from the old pool to the new one (a
    mixed one keeps its own CPUs beside it).

    Kept as one fact rather than one update per container: a decision stays cheap with hundreds
    of shared containers, and an adapter that queues updates can let a newer pool supersede an
    older one wholesale.
    """

    before: CPUSet
    after: CPUSet
    container_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The ledger a change would produce, the new container's placement (if any), and the live
    updates every other affected container needs. Nothing happens until it is committed."""

    base: Ledger
    result: Ledger
    shared_pool: CPUSet
    """The shared pool after the change."""
    reserved_pool: CPUSet = EMPTY
    """The pool of the reserved CPUs after the change (``policy.shared.reserved_pool``)."""
    container_id: str | None = None
    placement: Placement | None = None
    reason: str = ""
    """Why the new container gets this placement (its classification and the policy step)."""
    moves: tuple[ContainerUpdate, ...] = ()
    """Updates of individual containers (integer moves, synchronize corrections)."""
    pool_change: PoolChange | None = None
    problems: tuple[AdmissionError, ...] = ()
    """Containers a synchronize could not place as they ask (reported, never raised)."""
    topology: Topology | None = None
    """The machine's new topology, for a plan made after CPUs went on- or offline: committing
    the plan makes it the engine's (``None``: unchanged)."""
    _updates: tuple[ContainerUpdate, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def changes_ledger(self) -> bool:
        return self.result is not self.base

    @property
    def updates(self) -> tuple[ContainerUpdate, ...]:
        """Every live update: the moves, then one update per shared container of the pool
        change (built on first access)."""
        if self._updates is None:
            object.__setattr__(self, "_updates", (*self.moves, *self._pool_updates()))
        assert self._updates is not None
        return self._updates

    def _pool_updates(self) -> list[ContainerUpdate]:
        change = self.pool_change
        if change is None:
            return []
        entries = self.result.entries
        after, before = change.after, change.before
        updates = []
        for cid in change.container_ids:
            entry = entries[cid]
            own = entry.cpus
            # A mixed container runs on its own CPUs too: they come with the pool, before and
            # after. A plain shared one (500 of them on a dense node) shares the pool's sets.
            updates.append(ContainerUpdate(
                container_id=cid, subject=entry.subject, kind=Kind.SHARED,
                cpus=own | after if own else after,
                previous_cpus=own | before if own else before, reason="shared pool changed"))
        return updates


def moved_with_pool(moves: tuple[ContainerUpdate, ...], others: tuple[str, ...],
                     result: Ledger, before: CPUSet, after: CPUSet,
                     ) -> tuple[tuple[ContainerUpdate, ...], tuple[str, ...]]:
    """A mixed container moved by a pin while the pool changes gets one update: its new CPUs
    with the new pool, from its old ones with the old pool (the rollback target)."""
    moved = {update.container_id for update in moves
             if result.entries[update.container_id].with_shared}
    if not moved:
        return moves, others
    merged = tuple(replace(update, cpus=update.cpus | after,
                           previous_cpus=update.previous_cpus | before)
                   if update.container_id in moved else update for update in moves)
    return merged, tuple(cid for cid in others if cid not in moved)
