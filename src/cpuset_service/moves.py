"""The containers each creation moved off a new pin, until that container is gone.

If the creation failed after our answer (another plugin, a validator), the runtime applied none
of its moves, and the Stop or Remove it then sends must put them where the ledger says.
"""

from __future__ import annotations

from collections.abc import Iterable

from cpuset_core import ContainerUpdate, CpusetEngine


class MovedBy:
    """Creator id -> the ids of the containers its creation moved."""

    def __init__(self) -> None:
        self._moved: dict[str, tuple[str, ...]] = {}

    def remember(self, creator: str, moves: Iterable[ContainerUpdate]) -> None:
        self._moved[creator] = tuple(m.container_id for m in moves)

    def take(self, creator: str) -> tuple[str, ...]:
        """The containers ``creator`` moved, forgotten from now on."""
        return self._moved.pop(creator, ())

    def reasserted(self, creator: str, engine: CpusetEngine) -> list[ContainerUpdate]:
        """Updates that put every container ``creator`` moved where the ledger says (a no-op
        when the runtime applied the moves); forgets them."""
        updates = []
        entries = engine.ledger.entries
        for moved in self.take(creator):
            placement = engine.placement(moved)
            if placement is not None and placement.cpus:
                updates.append(ContainerUpdate(
                    container_id=moved, subject=entries[moved].subject, kind=placement.kind,
                    cpus=placement.cpus, previous_cpus=placement.cpus, mems=placement.mems,
                    previous_mems=placement.mems, reason="re-asserted: its mover stopped"))
        return updates
