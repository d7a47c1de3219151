"""Other containers' cpusets written into the kernel before the runtime is answered.

A decision's updates to running containers are applied through a
:class:`~cpuset_core.ports.ContainerUpdater` that writes the kernel (an adapter) in the steps
``transaction.stage`` defines — shrink shared, move integer, grow shared — and only what the
kernel took leaves the answer. At the first step the kernel refuses any part of, the writing
stops: the refused updates and every later step ride on the answer as before (the runtime
applies the answer's updates, in the same safe order, before it creates the new container), so
no CPU is handed to an exclusive owner while a container the kernel would not shrink still
holds it. Nothing is undone: each step is safe on its own, and the answer finishes the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from cpuset_core import ContainerUpdate, stage
from cpuset_core.ports import ContainerUpdater
from cpuset_core.transaction import Step

_log = logging.getLogger("nri_cpuset.kernel")

# How the background pusher paces the fast path's work (it imports these).
KERNEL_CHUNK = 50
"""Containers written into the kernel between two returns to the event loop (about 1 ms)."""
RECORD_BATCH = 1
"""Record-only updates (the kernel has them already) per UpdateContainers call: each holds the
runtime's NRI lock for one runc update (13-25 ms), which is what a CRI call the plugin cannot
see coming (another pod's RunPodSandbox) may wait for (issue 45)."""
RECORD_GAP = 0.05
"""Seconds between two record-only calls, for the runtime's other calls to get the lock."""
RECORD_PER_ANSWER = 1
"""Record-only updates riding on one answer: a creation during catch-up waits for at most
that many runc updates more."""


class KernelFirst:
    """Applies updates to the kernel first when an updater is attached and enabled."""

    def __init__(self) -> None:
        self.updater: ContainerUpdater | None = None
        self.enabled = True
        """``runtime.kernel_updates``: off, every update goes through the runtime again."""
        self.written = 0
        """Container updates the kernel took so far."""
        self.refused = 0
        """Container updates the kernel refused (sent through the runtime instead)."""
        self.forgotten: Callable[[str], None] = lambda _container_id: None
        """Tells the updater a container is gone (it closes what it kept open for it)."""
        self.resynced: Callable[[], None] = lambda: None
        """Tells the updater everything is decided again (it closes what it kept open)."""
        self.readied: Callable[[Iterable[str]], None] = lambda _container_ids: None
        """Tells the updater these containers' cgroups exist and may be written: it readies
        them off the hooks' path (returns at once)."""

    def attach(self, updater: ContainerUpdater, *, forgotten: Callable[[str], None],
               resynced: Callable[[], None],
               readied: Callable[[Iterable[str]], None] | None = None) -> None:
        """Write through ``updater``, telling it when a container goes, at a resync, and
        which containers to ready for their first write."""
        self.updater, self.forgotten, self.resynced = updater, forgotten, resynced
        if readied is not None:
            self.readied = readied

    def ready(self, container_ids: Iterable[str]) -> None:
        """These containers run (a resync saw them, or one started): the updater may ready
        their first write now, so a later creation's writes to them are writes only."""
        if self.active:
            self.readied(container_ids)

    def switch(self, enabled: bool) -> None:
        """``runtime.kernel_updates`` reloaded: takes effect at the next update."""
        self.enabled = enabled
        _log.info("other containers' cpuset updates: %s", "kernel first" if enabled
                  else "through the runtime only (runtime.kernel_updates = false)")

    @property
    def active(self) -> bool:
        return self.enabled and self.updater is not None

    def apply(self, updates: Sequence[ContainerUpdate],
              ) -> tuple[list[ContainerUpdate], list[ContainerUpdate]]:
        """Write ``updates`` (one per container) into the kernel in safe steps; return
        ``(written, left)``: the updates the kernel fully took, and the rest in their given
        order, for the runtime."""
        if not self.active or not updates:
            return [], list(updates)
        assert self.updater is not None
        # An empty cpuset cannot be written (nor set through the runtime): left as it is.
        steps = stage([u for u in updates if u.cpus])
        refused = ""
        for taken, step in enumerate(steps):
            outcome = self.updater.apply(step)
            if not outcome.ok:
                refused = outcome.detail or "the kernel refused the write"
                written = _fully_written(updates, steps, taken + 1, set(outcome.failed))
                break
        else:  # every step taken (the rule at 500 shared containers: no per-part counting)
            written = [u for u in updates if u.cpus]
        done = {u.container_id for u in written}
        left = [u for u in updates if u.container_id not in done]
        self.written += len(written)
        if refused:
            self.refused += len(left)
            _log.warning("kernel write refused; through the runtime instead", extra={
                "count": len(left), "error": refused})
        return written, left


def _fully_written(updates: Sequence[ContainerUpdate], steps: Sequence[Step], tried: int,
                   failed: set[str]) -> list[ContainerUpdate]:
    """The updates whose every part (in ``steps``) was in the ``tried`` first steps and not
    ``failed`` (the last one tried failed for them): a container split into a shrink and a
    grow is written only when both were."""
    parts: dict[str, int] = {}
    applied: dict[str, int] = {}
    for number, step in enumerate(steps):
        for part in step:
            cid = part.container_id
            parts[cid] = parts.get(cid, 0) + 1
            if number < tried and cid not in failed:
                applied[cid] = applied.get(cid, 0) + 1
    return [u for u in updates
            if u.cpus and applied.get(u.container_id, 0) == parts[u.container_id]]
