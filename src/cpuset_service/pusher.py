"""The one background task that sends live updates the runtime did not ask for.

Updates that cannot ride on an event's response (after RemoveContainer, retries, repairs) are
never sent from inside a hook: containerd holds its NRI lock for the whole event, so an
UpdateContainers call from a hook would block until the runtime's deadline and get the plugin
disconnected (fact sheet §6.3). The service only marks containers dirty; this task sends, per
container, whatever the committed ledger says *at send time* — so a later decision supersedes an
earlier one (latest wins), a container that is gone is dropped, and a container already on its
target is skipped. How a batch reaches the runtime is the adapter's (``Sender``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol

from cpuset_core import ContainerUpdate, CPUSet, Ledger, Placement
from cpuset_service import events
from cpuset_service.observer import NO_OBSERVER, Observer

Sender = Callable[[Sequence[ContainerUpdate]], Awaitable[None]]
"""Sends one batch of live updates to the runtime; raises when it is not applied."""

_log = logging.getLogger("nri_cpuset.updates")

QUIET_POLL = 0.05
"""Seconds between looks at whether the runtime is quiet enough for a send."""
MAX_BATCH = 50
"""Containers per UpdateContainers call, and per answer they ride on. The runtime applies
them one by one (runc, 15-40 ms each on a busy node) while every other NRI event waits: the pool
growing back on 500 containers must not hold the node's pod starts for 20 s."""


class Placements(Protocol):
    """Where the committed ledger puts each container (the placement service)."""

    @property
    def ledger(self) -> Ledger: ...

    def placement(self, container_id: str) -> Placement | None: ...


class UpdatePusher:
    """Coalesces dirty containers and sends their current placement in one batch at a time."""

    def __init__(self, placements: Placements, *, max_backoff: float = 5.0,
                 observer: Observer = NO_OBSERVER) -> None:
        self._placements = placements
        self._observer = observer
        self._dirty: set[str] = set()
        self._sent: dict[str, tuple[CPUSet, CPUSet | None]] = {}
        self._wake = asyncio.Event()
        self._max_backoff = max_backoff
        self.sent = 0
        """Batches sent (and applied) so far: a change tells the verifier a send landed."""
        self._generation = 0
        """Bumped by :meth:`reset`: results of a send started before it are discarded."""
        self._in_flight: dict[str, tuple[CPUSet, CPUSet | None]] = {}
        """What the batch being sent sets, per container (filled by :meth:`take_batch`)."""

    def mark_dirty(self, container_ids: Iterable[str]) -> None:
        """Ask for these containers to be brought to their committed placement (from a hook:
        no I/O, returns at once)."""
        self._dirty.update(container_ids)
        if self._dirty:
            self._wake.set()

    def record_applied(self, container_id: str, cpus: CPUSet, mems: CPUSet | None) -> None:
        """Remember what an event response set, so the same value is not sent again."""
        self._sent[container_id] = (cpus, mems)

    def force(self, container_ids: Iterable[str]) -> None:
        """Send these containers' placement even if it was sent before (it may not have been
        applied: e.g. the moves of a creation that failed after our answer)."""
        ids = list(container_ids)
        for cid in ids:
            self._sent.pop(cid, None)
        self.mark_dirty(ids)

    def forget(self, container_id: str) -> None:
        self._sent.pop(container_id, None)
        self._dirty.discard(container_id)

    def reset(self) -> None:
        """Drop everything pending (the connection is gone; the next Synchronize decides),
        including the outcome of a send still in flight."""
        self._generation += 1
        self._in_flight.clear()
        self._dirty.clear()
        self._sent.clear()
        self._wake.clear()

    def pending(self) -> frozenset[str]:
        return frozenset(self._dirty)

    def known(self) -> dict[str, CPUSet]:
        """The cpuset the plugin last set or learned for each container."""
        return {cid: cpus for cid, (cpus, _mems) in self._sent.items()}

    def take_batch(self) -> list[ContainerUpdate]:
        """Return the next updates to send, at most :data:`MAX_BATCH` (no-ops dropped); the
        rest stay pending for the next batch."""
        batch = self._take(set())
        for update in batch:
            self._in_flight[update.container_id] = (update.cpus, update.mems)
        return batch

    def take_for_answer(self, exclude: set[str], *, answered: set[str]) -> list[ContainerUpdate]:
        """Return what is pending for containers not in ``exclude`` (each container may appear
        once in an answer), at most :data:`MAX_BATCH`, to ride on the answer the runtime is
        waiting for: it applies those without the lock-order risk of a call of our own. They
        count as sent; so do the ``answered`` containers, which the answer sets to their
        placement already."""
        self._dirty -= answered
        # One being sent in the background is left to that send (settled when it returns).
        batch = self._take(exclude | self._in_flight.keys())
        for update in batch:
            self._sent[update.container_id] = (update.cpus, update.mems)
        return batch

    def _take(self, exclude: set[str]) -> list[ContainerUpdate]:
        batch: list[ContainerUpdate] = []
        entries = self._placements.ledger.entries
        for cid in sorted(self._dirty - exclude):
            if len(batch) == MAX_BATCH:
                self._wake.set()  # the rest goes in the next batch
                break
            self._dirty.discard(cid)
            placement = self._placements.placement(cid)
            if placement is None:  # gone: nothing to pin
                self._sent.pop(cid, None)
                continue
            target = (placement.cpus, placement.mems)
            sent = self._sent.get(cid)
            if sent == target or not placement.cpus:
                continue
            # What it runs on before is what was last sent (the placement itself when never:
            # background sends are repairs and releases, never undone, so it only informs).
            before = sent if sent is not None else target
            batch.append(ContainerUpdate(
                container_id=cid, subject=entries[cid].subject, kind=placement.kind,
                cpus=placement.cpus, previous_cpus=before[0], mems=placement.mems,
                previous_mems=before[1] if before[1] is not None else placement.mems,
                reason="background update"))
        return batch

    async def run(self, send: Sender, *, quiet: Callable[[], bool] = lambda: True) -> None:
        """Send batches until cancelled; a failed batch is retried with exponential backoff
        (everything this task sends is a release or a repair, so retrying is safe). A batch
        waits until ``quiet()`` (no runtime call for a while); meanwhile what is pending may
        ride on answers instead (:meth:`take_for_answer`)."""
        backoff = 0.1
        while True:
            await self._wake.wait()
            self._wake.clear()
            while not quiet():
                await asyncio.sleep(QUIET_POLL)
            batch = self.take_batch()
            if not batch:
                continue
            generation = self._generation
            try:
                await send(batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure: keep the work, retry later
                if generation != self._generation:
                    continue  # the connection was replaced: the next Synchronize decides
                failed = [u.container_id for u in batch]
                self._observer.update_batch("failed", failed)
                _log.warning("updates failed", extra={
                    "containers": self._subjects(batch), "error": str(exc),
                    "retry_in_s": backoff})
                for cid in failed:
                    self._in_flight.pop(cid, None)
                self.mark_dirty(failed)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
                continue
            backoff = 0.1
            if generation != self._generation:
                continue
            self.sent += 1
            self._observer.update_batch("applied", [u.container_id for u in batch])
            self._settle(batch)
            _log.info("updates sent", extra={"count": len(batch),
                                             "containers": self._subjects(batch)})

    def _settle(self, batch: Sequence[ContainerUpdate]) -> None:
        """After a send: a decision taken while it was in flight may have been applied before
        it, so whatever now differs from the ledger is sent again (latest wins, eventually)."""
        for update in batch:
            cid = update.container_id
            sent = self._in_flight.pop(cid)
            events.updated(update)  # the batch's event names them all at info
            placement = self._placements.placement(cid)
            if placement is None:
                continue
            if (placement.cpus, placement.mems) != sent:
                self.force([cid])
            else:
                self._sent[cid] = sent

    def _subjects(self, batch: Sequence[ContainerUpdate]) -> str:
        return ", ".join(f"{u.subject} ({events.short_id(u.container_id)})" for u in batch)
