"""Planning one change against the engine's committed state: a container admitted or resized
(a pin and the moves it forces, an integer container, a shared one), or containers released.

Every plan carries the shared pool's updates and is refused when it would leave the pool empty,
or shrink it below the operator's minimum, under containers that share it. The engine
(``engine``) keeps the state between events and hands a :class:`ChangePlanner` a snapshot of it
for each one; the planner decides and changes nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from cpuset_core.aligning import check_alignment, hinted, misaligned
from cpuset_core.classify import classify
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.draining import Draining
from cpuset_core.errors import (
    InsufficientCpusError,
    InsufficientCpusForReassignmentError,
    InvalidAnnotationError,
    IsolatedCpusUnavailableError,
    PinNotAllowedError,
    ReservedCpusUnavailableError,
    SharedPoolBelowMinimumError,
    SharedPoolExhaustedError,
)
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import ContainerFacts, ContainerUpdate, Kind, Placement, PodFacts, subject_of
from cpuset_core.placing import (
    Live,
    away_from_devices,
    choose_exclusive,
    integer_entry,
    place_pin,
    resize_exclusive,
    shared_entry,
)
from cpuset_core.plan import Plan, PoolChange, moved_with_pool
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.policy.reassign import NoRoomToMoveError, apply_moves, plan_moves
from cpuset_core.policy.shared import exclusive_free, reserved_pool, shared_pool
from cpuset_core.reuse import LeftBehind, reuse_choice
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology
from cpuset_core.workload import DOMAIN, ISOLATED, Unmet


@dataclass(frozen=True, slots=True)
class ChangePlanner:
    """Plans changes to ``base``, the committed ledger, on the engine's machine and settings."""

    topology: Topology
    settings: Settings
    allocator: ExclusiveAllocator
    base: Ledger
    draining: Draining
    """CPUs running containers gave up, kept from every exclusive choice."""
    left_behind: LeftBehind
    reuse_released: bool
    """Whether a pin may move containers onto CPUs freed by the same change (not while
    releases wait to be confirmed)."""

    def shared_pool(self) -> CPUSet:
        """The committed shared pool."""
        return shared_pool(self.topology, self.base.reserved, self.settings)

    def create(self, pod: PodFacts, container: ContainerFacts) -> Plan:
        """See :meth:`CpusetEngine.plan_create`."""
        item = Live(container, subject_of(pod, container),
                    classify(pod, container, self.settings))
        working = self.base.without(container.id)
        if item.decision.kind is Kind.ANNOTATED:
            return self._plan_annotated(working, item)
        if item.decision.kind is Kind.INTEGER:
            return self._plan_integer(working, item)
        pool = shared_pool(self.topology, working.reserved, self.settings)
        reason = item.decision.reason
        if item.decision.on_reserved and not self.reserved_pool():
            reason = self._unmet_reserved(item)
            item = Live(container, item.subject, replace(item.decision, reason=reason))
        elif item.decision.on_reserved:
            return self._finish(working.with_entry(shared_entry(item)), container.id,
                                Placement(kind=Kind.SHARED, cpus=self.reserved_pool()), reason)
        if not pool:
            raise SharedPoolExhaustedError(item.subject, "every online CPU is pinned, exclusive "
                                                         "or isolated")
        return self._finish(working.with_entry(shared_entry(item)), container.id,
                            Placement(kind=Kind.SHARED, cpus=pool), reason)

    def reserved_pool(self) -> CPUSet:
        """The CPUs containers on the reserved CPUs run on."""
        return reserved_pool(self.topology, self.settings)

    def _unmet_reserved(self, item: Live) -> str:
        """The reason of a container asking for the reserved CPUs while none is online, placed
        on the shared pool (best effort); refused under ``unmet_requests = "refuse"``."""
        why = item.decision.reason.partition(" (else: ")[0]
        if self.settings.unmet_requests is Unmet.REFUSE:
            raise ReservedCpusUnavailableError(
                item.subject, why, (self.settings.system_reserved & self.topology.online
                                    ).format())
        return f"{why}, but none is online: on the shared pool (best effort)"

    def resize(self, pod: PodFacts, container: ContainerFacts) -> Plan:
        """See :meth:`CpusetEngine.plan_resize`."""
        current = self.base.get(container.id)
        try:
            decision = classify(pod, container, self.settings)
        except (InvalidAnnotationError, PinNotAllowedError) as exc:
            if current is None or current.kind is Kind.INTEGER:
                raise
            # Running already with a pin it may not claim now (a Synchronize kept it shared, or
            # the allowlist narrowed since): a resize keeps it where it runs. Refusing would
            # fail every resize of the pod until it is recreated.
            return self.unchanged(container.id, f"{exc.detail}; keeps its placement")
        if current is None or current.label != decision.label:
            return self.create(pod, container)  # unknown, or a change of class
        if current.kind is Kind.ANNOTATED:
            return self.unchanged(container.id, "pinned containers keep their pin")
        if decision.kind is Kind.SHARED or decision.request == current.request:
            return self.unchanged(container.id, f"{decision.reason}; size unchanged")
        return self._plan_integer_resize(Live(container, subject_of(pod, container), decision),
                                         current.cpus)

    def unchanged(self, container_id: str | None = None, reason: str = "") -> Plan:
        """A plan that changes nothing (placing ``container_id`` where it is)."""
        pool, reserved = self.shared_pool(), self.reserved_pool()
        placement = (None if container_id is None
                     else self.base.placement(container_id, pool, reserved))
        return Plan(base=self.base, result=self.base, shared_pool=pool, reserved_pool=reserved,
                    container_id=container_id, placement=placement, reason=reason)

    def release(self, container_ids: Sequence[str], reason: str) -> Plan:
        """Drop ``container_ids`` from the ledger; none gives a plan that changes nothing."""
        if not container_ids:
            return self.unchanged()
        result = self.base
        for cid in container_ids:
            result = result.without(cid)
        return self._finish(result, None, None, reason)

    def _finish(self, result: Ledger, container_id: str | None,
               placement: Placement | None, reason: str, *,
               moves: tuple[ContainerUpdate, ...] = ()) -> Plan:
        """Add the shared-pool updates, refuse an empty pool, and wrap it all in a plan."""
        # What containers run on now is the committed pool, even when `working` dropped a
        # container being re-created: updates must name the true previous CPUs for rollback.
        before = self.shared_pool()
        after = shared_pool(self.topology, result.reserved, self.settings)
        reserved = self.reserved_pool()
        others = result.on_pool(reserved)
        entry = result.entries[container_id] if container_id is not None else None
        if entry is not None:
            others = tuple(cid for cid in others if cid != container_id)
            if entry.on_shared_pool and placement is not None:
                # Its placement is the pool after the change (a mixed one's, beside its own).
                placement = replace(placement, cpus=entry.runs_on(after, reserved))
        if entry is not None and entry.with_shared and not after:
            # It runs on the pool too: it must not be left with its exclusive CPUs alone.
            raise SharedPoolExhaustedError(entry.subject, "its exclusive CPUs would leave the "
                                                          "shared pool empty")
        # Refuse a change that empties the pool, or shrinks it below the operator's minimum.
        # One that finds it already there (a state a synchronize reported and could not avoid)
        # is not refused: a release must never fail.
        subject = result.entries[container_id].subject if container_id else reason
        if before and not after and others:
            raise SharedPoolExhaustedError(
                subject, f"{len(others)} shared container(s) would have no CPU left")
        floor = self.settings.min_shared_pool
        if len(after) < floor and len(after) < len(before):
            raise SharedPoolBelowMinimumError(subject, len(after), floor)
        if after != before:
            moves, others = moved_with_pool(moves, others, result, before, after)
        change = PoolChange(before, after, others) if after != before and others else None
        return Plan(base=self.base, result=result, shared_pool=after, reserved_pool=reserved,
                    container_id=container_id, placement=placement, reason=reason,
                    moves=moves, pool_change=change)

    def _plan_annotated(self, working: Ledger, item: Live) -> Plan:
        pinned = place_pin(self.topology, self.settings, item)
        if pinned.problems:  # admitted only when every pinned CPU is online, with its memory
            raise pinned.problems[0]
        entry = pinned.entry
        assert entry is not None  # no problem: every pinned CPU is online
        # Every CPU a moved container might take; each takes only those of its own kind
        # (isolated ones for a container that asked for them, others for the rest).
        free = self._free(working) | self._free(working, isolated=True)
        try:
            moves = plan_moves(self.topology, self.allocator, working, entry.cpus, free,
                               options=self.settings.allocation,
                               reuse_released=self.reuse_released, eligible=self._eligible)
        except NoRoomToMoveError as exc:
            raise InsufficientCpusForReassignmentError(
                item.subject, exc.conflicting, exc.needed, exc.free,
                whole_cores=self.settings.allocation.full_physical_cores, why=exc.detail) from exc
        result, updates = apply_moves(self.topology, working, moves, entry.cpus,
                                      pinned_by=item.subject)
        reason = item.decision.reason
        if remote := away_from_devices(self.topology, entry.cpus, entry.near):
            reason += f"; {remote}"
        if moves:
            reason += f"; moved {', '.join(m.entry.subject for m in moves)}"
        return self._finish(result.with_entry(entry), entry.container_id,
                            Placement(kind=Kind.ANNOTATED, cpus=entry.cpus, mems=entry.mems),
                            reason, moves=updates)

    def _plan_integer(self, working: Ledger, item: Live) -> Plan:
        with self._naming_draining(working):
            return self._place_integer(working, item)

    def _place_integer(self, working: Ledger, item: Live) -> Plan:
        item = self._isolation_met(working, hinted(self.topology, self.settings, working, item))
        free = self._free(working, isolated=item.decision.isolated)
        request = item.decision.request
        # CPUs its own pod's completed containers left, when still free and enough: the app
        # container lands where its init container warmed caches and memory (reuse.py).
        choice = reuse_choice(self.left_behind.of(item.facts.sandbox_id), request,
                              free=free, exclusive=working.exclusive, allocator=self.allocator,
                              options=self.settings.allocation)
        near = item.decision.near
        if choice is not None and away_from_devices(self.topology, choice.cpus, near):
            choice = None  # warm caches are worth less than its devices' node
        how = "reuses CPUs its pod's completed container(s) held: " if choice else ""
        if choice is None:
            choice = choose_exclusive(self.allocator, self.settings.allocation, item.subject,
                                      request, free, exclusive=working.exclusive, near=near)
        check_alignment(self.topology, self.settings, item, choice.cpus)
        return self._admit_integer(working, item, choice.cpus,
                                   f"{item.decision.reason}; {how}{choice.describe()}")

    def _plan_integer_resize(self, item: Live, current: CPUSet) -> Plan:
        working = self.base.without(item.facts.id)
        item = hinted(self.topology, self.settings, working, item)
        if item.decision.isolated and not current <= self.topology.isolated:
            # Placed on ordinary CPUs for want of isolated ones (best effort): it resizes
            # there, as it runs, rather than half on each kind.
            item = Live(item.facts, item.subject, replace(item.decision, isolated=None))
        free = self._free(working, but=item.facts.id, isolated=item.decision.isolated)
        with self._naming_draining(working, but=item.facts.id):
            cpus, how = resize_exclusive(self.topology, self.allocator,
                                         self.settings.allocation, item, current, free=free,
                                         exclusive=working.exclusive)
            if misaligned(self.topology, self.settings, item, cpus):
                # Grown in place it would break the policy: placed afresh (its own CPUs count
                # as free), it may fit one aligned set; else the check below refuses it.
                choice = choose_exclusive(self.allocator, self.settings.allocation,
                                          item.subject, item.decision.request, free,
                                          exclusive=working.exclusive, near=item.decision.near,
                                          prefer_numa=self.topology.numa_nodes_of(current))
                if not misaligned(self.topology, self.settings, item, choice.cpus):
                    cpus, how = choice.cpus, f"re-placed to stay aligned, {choice.describe()}"
        check_alignment(self.topology, self.settings, item, cpus)
        return self._admit_integer(working, item, cpus, f"{item.decision.reason}; {how}")

    @contextlib.contextmanager
    def _naming_draining(self, working: Ledger, *, but: str | None = None) -> Iterator[None]:
        """A refusal for want of CPUs says how many are only draining: else a CPU with no
        owner in ``inspect`` looks free, and the refusal wrong."""
        try:
            yield
        except InsufficientCpusError as exc:
            held = self.draining.cpus(but=but) & exclusive_free(self.topology, working.reserved,
                                                                self.settings)
            if not held:
                raise
            raise InsufficientCpusError(exc.subject, exc.requested, exc.free,
                                        draining=len(held)) from exc

    def _free(self, working: Ledger, *, but: str | None = None,
              isolated: bool | None = None) -> CPUSet:
        """CPUs an exclusive choice may take: free in ``working``, of the kind ``isolated``
        asks (``exclusive_free``), none draining (``but`` that container's own, which it may
        take back)."""
        return (exclusive_free(self.topology, working.reserved, self.settings, isolated)
                - self.draining.cpus(but=but))

    def _eligible(self, entry: Entry) -> CPUSet:
        """Every CPU a move may give ``entry``: of the kind its ``isolated-cpus`` answer asks."""
        return exclusive_free(self.topology, EMPTY, self.settings, entry.isolated)

    def _isolation_met(self, working: Ledger, item: Live) -> Live:
        """``item`` as it will be placed when it asked for isolated CPUs: as asked when enough
        are free; else refused (``unmet_requests = "refuse"``) or placed as if it had not
        asked, saying so."""
        decision = item.decision
        if not decision.isolated:
            return item
        free = len(self._free(working, isolated=True))
        if free >= decision.request:
            return item
        isolated = self.topology.isolated & self.topology.online
        if self.settings.unmet_requests is Unmet.REFUSE:
            raise IsolatedCpusUnavailableError(item.subject, ISOLATED.feature + "." + DOMAIN,
                                               decision.request, free, isolated.format())
        return Live(item.facts, item.subject, replace(
            decision, isolated=None, reason=f"{decision.reason}, but {free} of the isolated "
                                            f"CPUs ({isolated or 'none'}) are free: not "
                                            f"isolated (best effort)"))

    def _admit_integer(self, working: Ledger, item: Live, cpus: CPUSet, reason: str) -> Plan:
        entry = integer_entry(self.topology, item, cpus, reason)
        return self._finish(working.with_entry(entry), item.facts.id,
                            Placement(kind=Kind.INTEGER, cpus=cpus, mems=entry.mems,
                                      with_shared=entry.with_shared), reason)

