"""Applying a batch of live updates through UpdateContainers, all-or-nothing.

The steps and their undo come from the core (``stage``, ``undo_steps``): every step is safe on
its own, and since the runtime never says which update of a failed call failed (fact sheet
§6.3), a failure undoes every step tried, the failing one included, newest first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from cpuset_adapters.nri import translate
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import ContainerUpdate, UpdateTransactionError, stage, undo_steps

Send = Callable[[Sequence[pb.ContainerUpdate]], Awaitable[None]]
"""One UpdateContainers call; raises on an error status or a lost connection."""


async def apply_staged(send: Send, updates: Sequence[ContainerUpdate], subject: str) -> None:
    """Send ``updates`` in safe steps; on a failure restore what was tried and raise
    :class:`UpdateTransactionError` (``restored`` says whether the restore went through)."""
    tried: list[tuple[ContainerUpdate, ...]] = []
    for step in stage(updates):
        tried.append(step)
        try:
            await send(translate.updates(step))
        except Exception as exc:
            restored = await _restore(send, tried)
            raise UpdateTransactionError(subject, [u.container_id for u in step], str(exc),
                                         restored=restored) from exc


async def _restore(send: Send, tried: Sequence[tuple[ContainerUpdate, ...]]) -> bool:
    restored = True
    for inverse in undo_steps(tried):
        try:
            await send(translate.updates(inverse))
        except Exception:  # noqa: BLE001 - keep restoring the other steps
            restored = False
    return restored
