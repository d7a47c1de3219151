"""The one background task that sends live updates the runtime did not ask for.

Updates that cannot ride on an event's response (after RemoveContainer, retries, repairs) are
never sent from inside a hook: containerd holds its NRI lock for the whole event, so an
UpdateContainers call from a hook would block until the runtime's deadline and get the plugin
disconnected (fact sheet §6.3). The service only marks containers dirty; this task sends, per
container, whatever the committed ledger says *at send time* — so a later decision supersedes an
earlier one (latest wins), a container that is gone is dropped, and a container already on its
target is skipped. How a batch reaches the runtime is the adapter's (``Sender``).

With the kernel fast path (:class:`KernelFirst`) a dirty container is written into the kernel
at once (no runtime lock is involved); only the runtime's *record* then lags, and follows in
small paced calls that never go while a creation or a start is under way (:mod:`record_pace`)
and no longer ride on answers — or, on a runtime whose NRI locks can deadlock on such a call
(decision 51), rides only on the answers to the runtime's own calls that are not a creation
(there containerd runs a runc update for it before it creates the container: decision 62).
What the kernel refuses goes through the runtime as before, on every answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence

from cpuset_core import ContainerUpdate, CPUSet
from cpuset_service import events
from cpuset_service.kernel_first import (
    KERNEL_CHUNK,
    RECORD_BATCH,
    RECORD_GAP,
    RECORD_PER_ANSWER,
    KernelFirst,
)
from cpuset_service.observer import NO_OBSERVER, Observer
from cpuset_service.pending_updates import Placements, take
from cpuset_service.record_pace import RecordPace

Sender = Callable[[Sequence[ContainerUpdate]], Awaitable[None]]
"""Sends one batch of live updates to the runtime; raises when it is not applied."""

_log = logging.getLogger("nri_cpuset.updates")

QUIET_POLL = 0.05
"""Seconds between looks at whether the runtime is quiet enough for a send."""
MAX_BATCH = 50
"""Containers per UpdateContainers call, and per answer they ride on. The runtime applies them
one by one (runc, 15-40 ms each) while every other NRI event waits (decision 25)."""


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
        self.kernel = KernelFirst()
        """The kernel fast path (inactive until the composition root attaches an updater)."""
        self._unwritten: set[str] = set()
        """Containers to write into the kernel (fast path active), then to record."""
        self._record: set[str] = set()
        """Containers the kernel has on their placement whose runtime record lags."""
        self._kernel: dict[str, tuple[CPUSet, CPUSet | None]] = {}
        """What was last written into each container's cgroup (fast path)."""
        self._kernel_wake = asyncio.Event()
        self.may_send_records: Callable[[], bool] = lambda: True
        """Whether a record-only update may go in a call of the plugin's own: not where such a
        call can deadlock the runtime's NRI for good (NRI before v0.12.1, decision 51), where
        records ride on answers only. Where it may, they never ride on answers."""
        self.pace = RecordPace()
        """When a record-only call of the plugin's own may go (wired by the daemon)."""

    def mark_dirty(self, container_ids: Iterable[str]) -> None:
        """Ask for these containers to be brought to their committed placement (from a hook:
        no I/O, returns at once)."""
        if not self.kernel.active:
            self.refused(container_ids)
            return
        self._unwritten.update(container_ids)
        if self._unwritten:
            self._kernel_wake.set()

    def refused(self, container_ids: Iterable[str]) -> None:
        """Send these through the runtime (the kernel refused them, or there is no fast path):
        on the next answers and in the background; a refusal even where the runtime's record
        has the target already (the kernel holds another: a write whose record lags, or none)."""
        ids = set(container_ids)
        for cid in ids if self.kernel.active else ():
            self._sent.pop(cid, None)
        self._dirty.update(ids)
        if self._dirty:
            self._wake.set()

    def kernel_applied(self, updates: Sequence[ContainerUpdate]) -> None:
        """These updates are in the kernel now; the runtime's record follows when it may."""
        for update in updates:
            cid = update.container_id
            self._unwritten.discard(cid)
            self._dirty.discard(cid)
            self._kernel[cid] = (update.cpus, update.mems)
            if self._sent.get(cid) != (update.cpus, update.mems):
                self._record.add(cid)
            else:  # back where its record already is (a pool that shrank and grew back)
                self._record.discard(cid)
        if self._record:
            self._wake.set()

    def write_first(self, updates: Sequence[ContainerUpdate]) -> list[ContainerUpdate]:
        """Write ``updates`` into the kernel (fast path) and mark what it took as written;
        return the rest (all of them without the fast path) for the caller to send on."""
        written, rest = self.kernel.apply(updates)
        self.kernel_applied(written)
        return rest

    def record_lags(self, container_ids: Iterable[str]) -> None:
        """The runtime's record of these containers may differ from what the kernel has (a
        rebuild read the kernel): send it their placement, as a record-only update."""
        for cid in container_ids:
            self._sent.pop(cid, None)
            self._record.add(cid)
        if self._record:
            self._wake.set()

    def record_applied(self, container_id: str, cpus: CPUSet, mems: CPUSet | None) -> None:
        """Remember what an event response set, so the same value is not sent again."""
        self._sent[container_id] = (cpus, mems)
        self._record.discard(container_id)

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
        self._unwritten.discard(container_id)
        self._record.discard(container_id)
        self._kernel.pop(container_id, None)
        self.kernel.forgotten(container_id)

    def reset(self) -> None:
        """Drop everything pending (the connection is gone; the next Synchronize decides),
        including the outcome of a send still in flight."""
        self._generation += 1
        self._in_flight.clear()
        self._dirty.clear()
        self._unwritten.clear()
        self._record.clear()
        self._kernel.clear()
        self._sent.clear()
        self._wake.clear()
        self.pace.reset()
        self.kernel.resynced()

    def pending(self) -> frozenset[str]:
        """Containers whose placement is still to go out by itself (kernel, or a call of the
        plugin's own); not records that wait for an answer to ride on (:meth:`record_pending`)."""
        records = self._record if self.may_send_records() else set()
        return frozenset(self._dirty | self._unwritten | records)

    def record_pending(self) -> frozenset[str]:
        """Containers the kernel has on their placement whose runtime record still lags."""
        return frozenset(self._record)

    def known(self) -> dict[str, CPUSet]:
        """The cpuset the plugin last set or learned for each container (kernel or record)."""
        lagging = {cid: self._kernel[cid] for cid in self._record if cid in self._kernel}
        return {cid: cpus for cid, (cpus, _mems) in (self._sent | lagging).items()}

    def take_batch(self) -> list[ContainerUpdate]:
        """Return the next updates to send, at most :data:`MAX_BATCH` (no-ops dropped); the
        rest stay pending for the next batch."""
        pending, limit = (self._dirty, MAX_BATCH) if self._dirty else (self._record, RECORD_BATCH)
        batch = self._take(pending, set(), limit)
        for update in batch:
            self._in_flight[update.container_id] = (update.cpus, update.mems)
        return batch

    def take_for_answer(self, exclude: set[str], *, answered: set[str],
                        records: bool = True) -> list[ContainerUpdate]:
        """Return what is pending for containers not in ``exclude`` (once each), at most
        :data:`MAX_BATCH`, to ride on the answer the runtime waits for (no lock-order risk):
        lagging records only if ``records`` (never on a creation's answer, decision 62). They
        count as sent; so do ``answered``, which the answer sets already."""
        self._dirty -= answered
        self._record -= answered
        # One being sent in the background is left to that send (settled when it returns).
        busy = exclude | self._in_flight.keys()
        batch = self._take(self._dirty, busy, MAX_BATCH)
        busy |= {u.container_id for u in batch}
        # Where records go in calls of our own they never lengthen an answer (issue 45).
        batch += self._take(self._record, busy, RECORD_PER_ANSWER
                            if records and not self.may_send_records() else 0)
        for update in batch:
            self._sent[update.container_id] = (update.cpus, update.mems)
        return batch

    def _take(self, pending: set[str], exclude: set[str], limit: int, *,
              unless_sent: bool = True) -> list[ContainerUpdate]:
        batch, more = take(self._placements, self._sent, pending, exclude, limit,
                           unless_sent=unless_sent)
        if more:
            self._wake.set()  # the rest goes in the next batch
        return batch

    async def run(self, send: Sender, *, quiet: Callable[[], bool] = lambda: True) -> None:
        """Send batches until cancelled, a failed one retried with backoff (releases and
        repairs: safe to retry). A batch waits for ``quiet()``, records also for their pace;
        meanwhile they may ride on answers. Kernel writes run beside it, without waiting."""
        await asyncio.gather(self._send_forever(send, quiet), self._write_kernel_forever())

    async def _write_kernel_forever(self) -> None:
        """Write dirty containers' placements into the kernel as soon as they are marked, a
        chunk at a time on the event loop (each write reflects the ledger when it is made, so
        no hook's decision can be overtaken by an older one written from a thread)."""
        while True:
            await self._kernel_wake.wait()
            self._kernel_wake.clear()
            while self._unwritten:
                chunk = self._take(self._unwritten, set(), KERNEL_CHUNK, unless_sent=False)
                refused = self.write_first(chunk)
                self.refused(u.container_id for u in refused)  # or the fast path is off
                await asyncio.sleep(0)

    async def _send_forever(self, send: Sender, quiet: Callable[[], bool]) -> None:
        backoff = 0.1
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._dirty and not self.may_send_records():
                continue  # the records ride on answers (take_for_answer)
            # Records wait for their pace (no creation or start under way), asked per call.
            while not quiet() or (not self._dirty and not self.pace.may_send()):
                await asyncio.sleep(QUIET_POLL)
            record_only = not self._dirty
            if record_only and not self.may_send_records():
                continue  # the runtime changed while this waited for a quiet spell
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
                    "containers": events.subjects(batch), "error": str(exc),
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
                                             "containers": events.subjects(batch)})
            if record_only:
                await asyncio.sleep(RECORD_GAP)  # the runtime's other calls take the lock

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
            else:  # its record is the kernel's now: not lagging either
                self.record_applied(cid, *sent)
