"""Applying a batch of live updates through UpdateContainers, all-or-nothing.

The steps and their undo come from the core (``stage``, ``undo_steps``): every step is safe on
its own, and since the runtime never says which update of a failed call failed (fact sheet
§6.3), a failure undoes every step tried, the failing one included, newest first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from cpuset_adapters.nri import translate
from cpuset_adapters.nri.observer import NO_OBSERVER, Observer
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import ContainerUpdate, UpdateTransactionError, stage, undo_steps

Send = Callable[[Sequence[pb.ContainerUpdate]], Awaitable[None]]
"""One UpdateContainers call; raises on an error status or a lost connection."""


async def apply_staged(send: Send, updates: Sequence[ContainerUpdate], subject: str, *,
                       observer: Observer = NO_OBSERVER) -> None:
    """Send ``updates`` in safe steps; on a failure restore what was tried and raise
    :class:`UpdateTransactionError` (``restored`` says whether the restore went through).
    Every call is reported to ``observer`` (applied, failed, or rolled_back for an undo)."""
    tried: list[tuple[ContainerUpdate, ...]] = []
    for step in stage(updates):
        tried.append(step)
        try:
            await send(translate.updates(step))
        except Exception as exc:
            observer.update_batch("failed", len(step))
            restored = await _restore(send, tried, observer)
            raise UpdateTransactionError(subject, [u.container_id for u in step], str(exc),
                                         restored=restored) from exc
        observer.update_batch("applied", len(step))


async def _restore(send: Send, tried: Sequence[tuple[ContainerUpdate, ...]],
                   observer: Observer) -> bool:
    restored = True
    for inverse in undo_steps(tried):
        try:
            await send(translate.updates(inverse))
        except Exception:  # noqa: BLE001 - keep restoring the other steps
            observer.update_batch("failed", len(inverse))
            restored = False
        else:
            observer.update_batch("rolled_back", len(inverse))
    return restored
