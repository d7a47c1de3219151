"""The verifier's use case: compare what the kernel enforces with the ledger, and repair.

A pass takes a snapshot (:meth:`Verifier.snapshot`: the ledger and each container's cgroup
path), an adapter reads those cgroups off the event loop, and :meth:`Verifier.verify` judges
what was read against the same snapshot and the ledger now: a container whose placement
changed while the files were read is left to the next pass (its new placement may simply not
be applied yet). What differs is re-sent through the background pusher, counted and logged; a
CFS quota back in the kernel of a container that runs without one (issue 44) is lifted again
in its cgroup, never re-sent: a runtime update would write the record's quota back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from cpuset_core import Ledger
from cpuset_core.policy.shared import shared_pool
from cpuset_core.verify import Mismatch, Observed, mismatches
from cpuset_service.events import short_id
from cpuset_service.placement import PlacementService
from cpuset_service.verification import DriftTracker, Verdict

_log = logging.getLogger("nri_cpuset.verifier")


class Verifier:
    """Confirms the service's placements against the kernel."""

    def __init__(self, service: PlacementService) -> None:
        self._service = service
        self._tracker = DriftTracker()

    def snapshot(self) -> tuple[Ledger, dict[str, str]]:
        """The ledger now, and the cgroup path of each container to read: not those waiting
        for their start, which have no cgroup yet (the start watch follows them)."""
        waiting = self._service.starts.waiting()
        return self._service.ledger, {cid: path for cid, path in
                                      self._service.cgroup_paths().items()
                                      if cid not in waiting}

    def quotas_judged(self) -> frozenset[str]:
        """The containers whose CFS quota a pass judges (those the plugin runs unthrottled):
        the only quota files worth reading."""
        return self._service.quota.unthrottled()

    def verify(self, observed: Mapping[str, Observed], *, read_from: Ledger) -> Verdict:
        """Judge ``observed`` (read for the snapshot whose ledger was ``read_from``), re-send
        what differs, and report the pass."""
        engine = self._service.engine
        ledger = engine.ledger
        for mismatch, _ in self._tracker.open():
            if mismatch.container_id not in ledger.entries:  # gone: nothing to repair
                self._tracker.forget(mismatch.container_id)
        then = shared_pool(engine.topology, read_from.reserved, engine.settings)
        now, reserved = engine.shared_pool(), engine.reserved_pool()
        stable = {cid: seen for cid, seen in observed.items()
                  if cid in ledger.entries
                  and read_from.placement(cid, then, reserved)
                  == ledger.placement(cid, now, reserved)}
        for cid, seen in stable.items():
            if seen.cpus is not None:  # what it left is free for exclusive use again
                engine.confirm(cid, seen.cpus)
        for cid in ledger.entries.keys() - self._service.cgroup_paths().keys():
            # No cgroup path from the runtime: nothing to read, so it cannot be confirmed;
            # trusting the ledger beats keeping its CPUs from exclusive use forever.
            placement = ledger.placement(cid, now, reserved)
            if placement is not None:
                engine.confirm(cid, placement.cpus)
        lifts = self._service.quota
        # Only while it still holds exclusive CPUs alone (a hotplug may have re-placed it).
        unthrottled = {cid for cid in lifts.unthrottled()
                       if (p := ledger.placement(cid, now, reserved)) and p.exclusive_only}
        found = mismatches(ledger, now, stable, reserved, unthrottled=unthrottled)
        verdict = self._tracker.judge(found, stable.keys())
        quota = {m.container_id for m in found if m.cause == "quota"}
        self._service.pusher.force(cid for cid in verdict.resend if cid not in quota)
        for cid in quota.intersection(verdict.resend):
            lifts.lift(cid)
        self._service.observer.verified(verdict)
        if verdict.repaired:
            self._service.notices.drift_repaired(verdict.repaired)
        _report(verdict)
        return verdict

    def drifting(self) -> list[tuple[Mismatch, int]]:
        """Containers off their placement at the last pass, with the re-sends so far."""
        return self._tracker.open()


def _report(verdict: Verdict) -> None:
    for mismatch in verdict.found:
        _log.warning("drift found", extra=_fields(mismatch))
    for mismatch in verdict.repaired:
        _log.info("drift repaired", extra={**_fields(mismatch), "source": "verifier"})
    for mismatch in verdict.unrepairable:
        _log.error("drift unrepairable", extra=_fields(mismatch))


def _fields(mismatch: Mismatch) -> dict[str, object]:
    return {"container": mismatch.subject, "id": short_id(mismatch.container_id),
            "cause": mismatch.cause, "detail": mismatch.describe()}
