"""The one background task that sends live updates the runtime did not ask for.

Updates that cannot ride on an event's response (after RemoveContainer, retries) are never sent
from inside a handler: containerd holds its NRI lock for the whole event, so an UpdateContainers
call from a handler would block until the runtime's deadline and get the plugin disconnected
(fact sheet §6.3). Handlers only mark containers dirty; this task sends, per container, whatever
the engine's committed ledger says *at send time* — so a later decision supersedes an earlier
one (latest wins), a container that is gone is dropped, and a container already on its target
is skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence

from cpuset_adapters.nri import translate
from cpuset_adapters.nri.decision_log import decision, mems_text, short_id
from cpuset_adapters.nri.observer import NO_OBSERVER, Observer
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import CPUSet, CpusetEngine

Sender = Callable[[Sequence[pb.ContainerUpdate]], Awaitable[None]]
"""Sends one UpdateContainers batch; raises on an error status."""

_log = logging.getLogger("nri_cpuset.updates")


class UpdatePusher:
    """Coalesces dirty containers and sends their current placement in one batch at a time."""

    def __init__(self, engine: CpusetEngine, *, max_backoff: float = 5.0,
                 observer: Observer = NO_OBSERVER) -> None:
        self._engine = engine
        self._observer = observer
        self._dirty: set[str] = set()
        self._sent: dict[str, tuple[CPUSet, CPUSet | None]] = {}
        self._wake = asyncio.Event()
        self._max_backoff = max_backoff
        self.batches_sent = 0
        self.updates_sent = 0
        self.failures = 0
        self.sent_per_container: Counter[str] = Counter()
        self._generation = 0
        """Bumped by :meth:`reset`: results of a send started before it are discarded."""
        self._in_flight: dict[str, tuple[CPUSet, CPUSet | None]] = {}
        """What the batch being sent sets, per container (filled by :meth:`take_batch`)."""

    def mark_dirty(self, container_ids: Iterable[str]) -> None:
        """Ask for these containers to be brought to their committed placement (from a
        handler: no I/O, returns at once)."""
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
        self.sent_per_container.pop(container_id, None)

    def replace_engine(self, engine: CpusetEngine) -> None:
        """Read placements from ``engine`` from now on (see
        :meth:`CpusetNriHandler.replace_engine`)."""
        self._engine = engine

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

    def known(self) -> dict[str, str]:
        """The cpuset the plugin last set or learned for each container (list format)."""
        return {cid: cpus.format() for cid, (cpus, _mems) in self._sent.items()}

    def take_batch(self) -> list[pb.ContainerUpdate]:
        """Return the updates to send now and clear the dirty set (no-ops dropped)."""
        batch: list[pb.ContainerUpdate] = []
        for cid in sorted(self._dirty):
            placement = self._engine.placement(cid)
            if placement is None:  # gone: nothing to pin
                self._sent.pop(cid, None)
                continue
            target = (placement.cpus, placement.mems)
            if self._sent.get(cid) == target or not placement.cpus:
                continue
            batch.append(translate.container_update(cid, placement.cpus, placement.mems))
            self._in_flight[cid] = target
        self._dirty.clear()
        return batch

    async def run(self, send: Sender) -> None:
        """Send batches until cancelled; a failed batch is retried with exponential backoff
        (everything this task sends is a release or a repair, so retrying is safe)."""
        backoff = 0.1
        while True:
            await self._wake.wait()
            self._wake.clear()
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
                self.failures += 1
                self._observer.update_batch("failed", len(batch))
                _log.warning("UpdateContainers failed for %s: %s; retrying in %.1fs",
                             self._subjects(batch), exc, backoff)
                failed = translate.ids(batch)
                for cid in failed:
                    self._in_flight.pop(cid, None)
                self.mark_dirty(failed)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
                continue
            backoff = 0.1
            if generation != self._generation:
                continue
            self.batches_sent += 1
            self.updates_sent += len(batch)
            self._observer.update_batch("applied", len(batch))
            self._settle(batch)
            _log.info("sent %d live update(s): %s", len(batch), self._subjects(batch))

    def _settle(self, batch: Sequence[pb.ContainerUpdate]) -> None:
        """After a send: a decision taken while it was in flight may have been applied before
        it, so whatever now differs from the ledger is sent again (latest wins, eventually)."""
        for update in batch:
            cid = update.container_id
            self.sent_per_container[cid] += 1
            sent = self._in_flight.pop(cid)
            self._log_sent(cid, *sent)
            placement = self._engine.placement(cid)
            if placement is None:
                continue
            if (placement.cpus, placement.mems) != sent:
                self.force([cid])
            else:
                self._sent[cid] = sent

    def _log_sent(self, cid: str, cpus: CPUSet, mems: CPUSet | None) -> None:
        # One event per container at debug; the batch line names them all at info.
        if not _log.isEnabledFor(logging.DEBUG):
            return
        entry = self._engine.ledger.get(cid)
        subject = entry.subject if entry is not None else "?/?/?"
        decision(_log, logging.DEBUG,
                 f"update {subject} id={short_id(cid)} kind={entry.kind.value if entry else ''} "
                 f"cpus={cpus} mems={mems_text(mems)} reason=background update", action="update",
                 container=subject, container_id=cid, kind=entry.kind if entry else None,
                 cpus=cpus, mems=mems, reason="background update")

    def _subjects(self, batch: Sequence[pb.ContainerUpdate]) -> str:
        entries = self._engine.ledger.entries
        return ", ".join(f"{entries[u.container_id].subject} ({short_id(u.container_id)})"
                         if u.container_id in entries else short_id(u.container_id)
                         for u in batch)
