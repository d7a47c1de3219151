"""Applying a batch of live updates from outside any hook, all-or-nothing.

The steps and their undo come from the core (``stage``, ``undo_steps``): every step is safe on
its own, and since the runtime never says which update of a failed call failed (fact sheet
§6.3), a failure undoes every step tried, the failing one included, newest first.
"""

from __future__ import annotations

from collections.abc import Sequence

from cpuset_core import ContainerUpdate, UpdateTransactionError, stage, undo_steps
from cpuset_service.observer import NO_OBSERVER, Observer
from cpuset_service.pusher import Sender as Send


async def apply_staged(send: Send, updates: Sequence[ContainerUpdate], subject: str, *,
                       observer: Observer = NO_OBSERVER) -> None:
    """Send ``updates`` in safe steps; on a failure restore what was tried and raise
    :class:`UpdateTransactionError` (``restored`` says whether the restore went through).
    Every call is reported to ``observer`` (applied, failed, or rolled_back for an undo)."""
    tried: list[tuple[ContainerUpdate, ...]] = []
    for step in stage(updates):
        tried.append(step)
        try:
            await send(step)
        except Exception as exc:
            observer.update_batch("failed", _ids(step))
            restored = await _restore(send, tried, observer)
            raise UpdateTransactionError(subject, [u.container_id for u in step], str(exc),
                                         restored=restored) from exc
        observer.update_batch("applied", _ids(step))


async def _restore(send: Send, tried: Sequence[tuple[ContainerUpdate, ...]],
                   observer: Observer) -> bool:
    restored = True
    for inverse in undo_steps(tried):
        try:
            await send(inverse)
        except Exception:  # noqa: BLE001 - keep restoring the other steps
            observer.update_batch("failed", _ids(inverse))
            restored = False
        else:
            observer.update_batch("rolled_back", _ids(inverse))
    return restored


def _ids(updates: Sequence[ContainerUpdate]) -> list[str]:
    return [u.container_id for u in updates]
