"""The updates that bring pending containers to what the committed ledger says *now*.

The background pusher keeps sets of container ids (to write into the kernel, to send through
the runtime, records that lag) and turns them into updates only when they go out, so a later
decision supersedes an earlier one (latest wins) and a container that is gone is dropped."""

from __future__ import annotations

from typing import Protocol

from cpuset_core import ContainerUpdate, CPUSet, Ledger, Placement


class Placements(Protocol):
    """Where the committed ledger puts each container (the placement service)."""

    @property
    def ledger(self) -> Ledger: ...

    def placement(self, container_id: str) -> Placement | None: ...


def take(placements: Placements, sent: dict[str, tuple[CPUSet, CPUSet | None]],
         pending: set[str], exclude: set[str], limit: int, *,
         unless_sent: bool = True) -> tuple[list[ContainerUpdate], bool]:
    """Up to ``limit`` updates for the containers in ``pending`` and not in ``exclude``, each
    removed from ``pending``; return them and whether some were left for a next batch. A gone
    container is dropped (and forgotten in ``sent``); with ``unless_sent``, so is one whose
    placement is what ``sent`` says the runtime was last given; an empty cpuset never goes."""
    batch: list[ContainerUpdate] = []
    if limit == 0:  # an answer that carries no records (500 may lag): nothing to sort
        return batch, not pending <= exclude
    entries = placements.ledger.entries
    for cid in sorted(pending - exclude):
        if len(batch) == limit:
            return batch, True
        pending.discard(cid)
        placement = placements.placement(cid)
        if placement is None:  # gone: nothing to pin
            sent.pop(cid, None)
            continue
        target = (placement.cpus, placement.mems)
        was = sent.get(cid)
        # The record may say so while the kernel differs: kernel writes check nothing.
        if (unless_sent and was == target) or not placement.cpus:
            continue
        batch.append(_update(cid, entries[cid].subject, placement, was or target))
    return batch, False


def _update(cid: str, subject: str, placement: Placement,
            before: tuple[CPUSet, CPUSet | None]) -> ContainerUpdate:
    # What it runs on before is what was last sent (the placement itself when never:
    # background sends are repairs and releases, never undone, so it only informs).
    return ContainerUpdate(
        container_id=cid, subject=subject, kind=placement.kind, cpus=placement.cpus,
        previous_cpus=before[0], mems=placement.mems,
        previous_mems=before[1] if before[1] is not None else placement.mems,
        reason="background update")
