"""Applying a plan's live updates all-or-nothing through a :class:`ContainerUpdater`.

The runtime may not say which updates of a batch failed, so a transaction is a few *steps*, each
safe to be in on its own, and a failure anywhere undoes every step tried so far (the failing one
included) in reverse order:

1. shared containers that lose CPUs shrink to ``before ∩ after`` — off CPUs about to become
   exclusive or pinned, without yet touching CPUs someone else still owns;
2. integer containers move to their new exclusive CPUs (which step 1 vacated);
3. shared containers reach their final set (growing onto what step 2 released).

So at every point no CPU has two exclusive owners and no shared container sits on a CPU that is
exclusive at that moment. (A shared container whose old and new sets are disjoint cannot step
through a safe intermediate; it moves in step 3.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cpuset_core.errors import UpdateTransactionError
from cpuset_core.model import ContainerUpdate, Kind
from cpuset_core.ports import ContainerUpdater

Step = tuple[ContainerUpdate, ...]


def stage(updates: Sequence[ContainerUpdate]) -> tuple[Step, ...]:
    """Split updates into the ordered steps described above; empty steps are left out."""
    shrink: list[ContainerUpdate] = []
    move: list[ContainerUpdate] = []
    grow: list[ContainerUpdate] = []
    for update in updates:
        if update.kind is not Kind.SHARED:
            move.append(update)
            continue
        # The pure cases first: no intersection to build (500 shrinks per integer creation).
        if update.cpus.issuperset(update.previous_cpus):
            grow.append(update)
        elif update.cpus.issubset(update.previous_cpus):
            (shrink if update.cpus else grow).append(update)
        elif not (common := update.cpus & update.previous_cpus):
            grow.append(update)
        else:
            shrink.append(replace(update, cpus=common))
            grow.append(replace(update, previous_cpus=common))
    return tuple(tuple(step) for step in (shrink, move, grow) if step)


def apply_transaction(updater: ContainerUpdater, updates: Sequence[ContainerUpdate],
                      subject: str) -> None:
    """Apply ``updates`` in safe steps; on any failure restore every container and raise.

    Raises :class:`UpdateTransactionError` naming the containers of the failed step (all of
    them when the updater cannot tell which failed) and whether the restore succeeded.
    """
    done: list[Step] = []
    for step in stage(updates):
        outcome = updater.apply(step)
        if outcome.ok:
            done.append(step)
            continue
        failed = outcome.failed or tuple(u.container_id for u in step)
        restore_failures = _undo([*done, step], updater)
        detail = outcome.detail or "runtime rejected the update"
        if restore_failures:
            detail += f"; restoring {', '.join(restore_failures)} also failed"
        raise UpdateTransactionError(subject, failed, detail, restored=not restore_failures)


def undo_steps(tried: Sequence[Step]) -> tuple[Step, ...]:
    """Return the steps that undo ``tried`` (every step attempted, the failing one included):
    newest first, each update inverted. Drivers of other updaters (e.g. an asynchronous NRI
    connection) use this with :func:`stage` so the rollback rule lives in one place."""
    return tuple(tuple(update.inverse() for update in step) for step in reversed(tried))


def _undo(steps: Sequence[Step], updater: ContainerUpdater) -> tuple[str, ...]:
    """Undo ``steps``; return the ids whose restore failed."""
    failures: list[str] = []
    for inverse in undo_steps(steps):
        outcome = updater.apply(inverse)
        if not outcome.ok:
            failures.extend(outcome.failed or tuple(u.container_id for u in inverse))
    return tuple(failures)
