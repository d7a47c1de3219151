"""The engine: the use cases (synchronize, create, release) as plans over the ledger.

Every use case returns a :class:`~cpuset_core.plan.Plan` and changes nothing; :meth:`commit`
makes a plan current. Callers that apply live updates first (see ``transaction``) commit only
when the runtime accepted all of them, so a failure leaves the ledger as it was.
"""

from __future__ import annotations

from collections.abc import Iterable

from cpuset_core.classify import classify
from cpuset_core.cpuset import CPUSet
from cpuset_core.draining import Draining
from cpuset_core.errors import (
    InsufficientCpusForReassignmentError,
    SharedPoolBelowMinimumError,
    SharedPoolExhaustedError,
    StalePlanError,
)
from cpuset_core.hotplug import replan
from cpuset_core.ledger import Ledger
from cpuset_core.model import ContainerFacts, ContainerUpdate, Kind, Placement, PodFacts, subject_of
from cpuset_core.placing import (
    Live,
    choose_exclusive,
    integer_entry,
    place_pin,
    resize_exclusive,
    shared_entry,
)
from cpuset_core.plan import Plan, PoolChange
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.policy.reassign import NoRoomToMoveError, apply_moves, plan_moves
from cpuset_core.policy.shared import exclusive_free, shared_pool
from cpuset_core.reuse import LeftBehind, reuse_choice
from cpuset_core.settings import LIVE_SETTINGS, Settings
from cpuset_core.sync import rebuild
from cpuset_core.topology import Topology


class CpusetEngine:
    """Decides every container's cpuset on one machine. Not thread-safe: one caller at a time
    (the runtime delivers events one by one)."""

    def __init__(self, topology: Topology, settings: Settings | None = None, *,
                 confirm_releases: bool = False) -> None:
        """``confirm_releases``: CPUs a running container gives up (a move, a shrink, a
        correction) are not given to another exclusive owner until :meth:`confirm` says the
        kernel shows them left (see ``draining``); without it they are free at once."""
        self._topology = topology
        self._settings = settings if settings is not None else Settings()
        self._allocator = ExclusiveAllocator(topology)
        self._ledger = Ledger()
        self._left_behind = LeftBehind()
        self._confirm_releases = confirm_releases
        self._draining = Draining()

    @property
    def topology(self) -> Topology:
        return self._topology

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def ledger(self) -> Ledger:
        """The committed ledger."""
        return self._ledger

    def shared_pool(self) -> CPUSet:
        """The current shared pool."""
        return shared_pool(self._topology, self._ledger.reserved, self._settings)

    def placement(self, container_id: str) -> Placement | None:
        """Where the committed ledger says the container runs (``None`` if unknown)."""
        return self._ledger.placement(container_id, self.shared_pool())

    def reconfigure(self, settings: Settings) -> None:
        """Apply new settings to the decisions that follow; existing placements stay.

        Only settings that do not change what running containers are owed may change live
        (who may pin, the allocation options, the minimum shared pool). Raises ``ValueError``
        naming the fields that need a restart (``LIVE_SETTINGS`` lists the others): changing
        the reserved CPUs or the pin annotation re-decides running containers, which a restart
        does from the runtime's own report.
        """
        fixed = [name for name in self._settings.differences(settings)
                 if name not in LIVE_SETTINGS]
        if fixed:
            raise ValueError(f"{', '.join(fixed)} cannot change while running; restart to "
                             f"apply")
        self._settings = settings

    def commit(self, plan: Plan) -> None:
        """Make ``plan`` current. Raises :class:`StalePlanError` when the ledger changed after
        the plan was made (its decisions may no longer hold)."""
        if plan.base is not self._ledger:
            raise StalePlanError("the ledger changed after this plan was made; plan again")
        self._left_behind = self._left_behind.after(plan.base, plan.result)
        if self._confirm_releases:
            self._draining = self._draining.after(plan.base, plan.result)
        if plan.topology is not None:  # CPUs went on- or offline: decide on the new machine
            self._topology, self._allocator = plan.topology, ExclusiveAllocator(plan.topology)
        self._ledger = plan.result

    # -- use cases -----------------------------------------------------------------------------

    def plan_synchronize(self, pods: Iterable[PodFacts], containers: Iterable[ContainerFacts],
                         *, keep_unlisted: bool = False) -> Plan:
        """Rebuild the ledger from every live pod and container the runtime reports.

        Returns a plan whose updates correct running containers (for example shared containers
        started while the plugin was down) and whose ``problems`` list the containers that could
        not be placed as they ask; those are left as they are and never raise. The committed
        ledger's containers that the report does not list are dropped, or, with
        ``keep_unlisted``, kept as decided (their pods need not be reported): a report that can
        lag the runtime's events, such as a CRI inventory (containerd calls NRI
        CreateContainer before the container enters its CRI store), must not free their CPUs.
        """
        return rebuild(self._topology, self._settings, self._allocator, base=self._ledger,
                       pods=pods, containers=containers, keep_unlisted=keep_unlisted)

    def plan_create(self, pod: PodFacts, container: ContainerFacts) -> Plan:
        """Decide a new container's placement and the live updates it causes.

        Raises an :class:`AdmissionError` subclass (and changes nothing) when the container
        cannot be admitted.
        """
        item = Live(container, subject_of(pod, container),
                    classify(pod, container, self._settings))
        working = self._ledger.without(container.id)
        if item.decision.kind is Kind.ANNOTATED:
            return self._plan_annotated(working, item)
        if item.decision.kind is Kind.INTEGER:
            return self._plan_integer(working, item)
        pool = shared_pool(self._topology, working.reserved, self._settings)
        if not pool:
            raise SharedPoolExhaustedError(item.subject, "every online CPU is pinned, exclusive "
                                                         "or isolated")
        return self._finish(working.with_entry(shared_entry(item)), container.id,
                            Placement(kind=Kind.SHARED, cpus=pool), item.decision.reason)

    def plan_resize(self, pod: PodFacts, container: ContainerFacts) -> Plan:
        """Decide a running container's placement after an in-place resize (the runtime's
        UpdateContainer, i.e. CRI UpdateContainerResources with the new limits).

        An integer container that shrinks keeps the best-shaped subset of its CPUs; one that
        grows keeps its CPUs and gets more next to them; a container that changes class
        (integer ↔ shared) is placed afresh; a pinned container keeps its pin. The plan's
        placement is the container's new cpuset. Raises an :class:`AdmissionError` subclass
        (and changes nothing) when the new size cannot be satisfied.
        """
        current = self._ledger.get(container.id)
        decision = classify(pod, container, self._settings)
        if current is None or current.kind is not decision.kind:
            return self.plan_create(pod, container)  # unknown, or a change of class
        if current.kind is Kind.ANNOTATED:
            return self._unchanged(container.id, "pinned containers keep their pin")
        if decision.kind is Kind.SHARED or decision.request == current.request:
            return self._unchanged(container.id, f"{decision.reason}; size unchanged")
        return self._plan_integer_resize(Live(container, subject_of(pod, container), decision),
                                         current.cpus)

    def plan_release(self, container_id: str) -> Plan:
        """Release a stopped or removed container's CPUs; unknown ids give an empty plan, so a
        stop followed by a remove releases exactly once."""
        base = self._ledger
        if container_id not in base:
            return Plan(base=base, result=base, shared_pool=self.shared_pool())
        entry = base.entries[container_id]
        return self._finish(base.without(container_id), None, None,
                            f"released {entry.kind.value} container {entry.subject}")

    def plan_release_pod(self, sandbox_id: str) -> Plan:
        """Release every container of a pod that is still in the ledger (the pod is stopping
        or gone: a container created but never started, whose stop or remove the runtime did
        not report, must not keep its CPUs). A pod with none gives an empty plan."""
        base = self._ledger
        gone = [cid for cid in sorted(base.entries) if base.entries[cid].sandbox_id == sandbox_id]
        if not gone:
            return Plan(base=base, result=base, shared_pool=self.shared_pool())
        result = base
        for cid in gone:
            result = result.without(cid)
        subjects = ", ".join(base.entries[cid].subject for cid in gone)
        return self._finish(result, None, None, f"released {subjects} with their pod")

    def plan_topology_change(self, topology: Topology) -> Plan:
        """Re-place every container after CPUs went offline or came back online (``topology``
        is the machine as it is now).

        Pins keep their online part and a pin that lost a CPU is reported; integer containers
        that held an offline CPU get new exclusive CPUs; the shared pool follows. Never raises
        for a container: what cannot be placed as it asks is in the plan's ``problems``.
        Committing the plan makes ``topology`` the engine's.
        """
        return replan(topology, self._settings, base=self._ledger,
                      pool_before=self.shared_pool())

    def left_behind(self, sandbox_id: str) -> CPUSet:
        """CPUs the pod's completed integer containers held that nobody has taken since (its
        next integer container prefers them; see ``reuse``)."""
        return self._left_behind.of(sandbox_id)

    @property
    def confirms_releases(self) -> bool:
        return self._confirm_releases

    @property
    def draining(self) -> CPUSet:
        """CPUs running containers gave up and may still run on, kept from exclusive use until
        confirmed (always empty without ``confirm_releases``)."""
        return self._draining.cpus()

    def confirm(self, container_id: str, running_on: CPUSet) -> None:
        """Someone read the container's cgroup: it runs on ``running_on``, so the CPUs it gave
        up outside that set are free for exclusive use again."""
        self._draining = self._draining.confirmed(container_id, running_on)

    def forget_pod(self, sandbox_id: str) -> None:
        """The pod is gone: drop what its completed containers left behind."""
        self._left_behind = self._left_behind.without_pod(sandbox_id)

    # -- helpers -------------------------------------------------------------------------------

    def _plan_annotated(self, working: Ledger, item: Live) -> Plan:
        pinned = place_pin(self._topology, self._settings, item)
        if pinned.problems:  # admitted only when every pinned CPU is online, with its memory
            raise pinned.problems[0]
        entry = pinned.entry
        assert entry is not None  # no problem: every pinned CPU is online
        free = self._free(working)
        try:
            moves = plan_moves(self._topology, self._allocator, working, entry.cpus, free,
                               options=self._settings.allocation,
                               reuse_released=not self._confirm_releases)
        except NoRoomToMoveError as exc:
            raise InsufficientCpusForReassignmentError(
                item.subject, exc.conflicting, exc.needed, exc.free,
                whole_cores=self._settings.allocation.full_physical_cores, why=exc.detail) from exc
        result, updates = apply_moves(working, moves, entry.cpus, pinned_by=item.subject)
        reason = item.decision.reason
        if moves:
            reason += f"; moved {', '.join(m.entry.subject for m in moves)}"
        return self._finish(result.with_entry(entry), entry.container_id,
                            Placement(kind=Kind.ANNOTATED, cpus=entry.cpus, mems=entry.mems),
                            reason, moves=updates)

    def _plan_integer(self, working: Ledger, item: Live) -> Plan:
        free = self._free(working)
        request = item.decision.request
        # CPUs its own pod's completed containers left, when still free and enough: the app
        # container lands where its init container warmed caches and memory (reuse.py).
        choice = reuse_choice(self._left_behind.of(item.facts.sandbox_id), request,
                              free=free, exclusive=working.exclusive, allocator=self._allocator,
                              options=self._settings.allocation)
        how = "reuses CPUs its pod's completed container(s) held: " if choice else ""
        if choice is None:
            choice = choose_exclusive(self._allocator, self._settings.allocation, item.subject,
                                      request, free, exclusive=working.exclusive)
        return self._admit_integer(working, item, choice.cpus,
                                   f"{item.decision.reason}; {how}{choice.describe()}")

    def _plan_integer_resize(self, item: Live, current: CPUSet) -> Plan:
        working = self._ledger.without(item.facts.id)
        free = self._free(working, but=item.facts.id)
        cpus, how = resize_exclusive(self._topology, self._allocator, self._settings.allocation,
                                     item, current, free=free, exclusive=working.exclusive)
        return self._admit_integer(working, item, cpus, f"{item.decision.reason}; {how}")

    def _free(self, working: Ledger, *, but: str | None = None) -> CPUSet:
        """CPUs an exclusive choice may take: free in ``working``, none draining (``but`` that
        container's own, which it may take back)."""
        return (exclusive_free(self._topology, working.reserved, self._settings)
                - self._draining.cpus(but=but))

    def _admit_integer(self, working: Ledger, item: Live, cpus: CPUSet, reason: str) -> Plan:
        return self._finish(working.with_entry(integer_entry(item, cpus, reason)), item.facts.id,
                            Placement(kind=Kind.INTEGER, cpus=cpus), reason)

    def _unchanged(self, container_id: str, reason: str) -> Plan:
        base = self._ledger
        pool = self.shared_pool()
        return Plan(base=base, result=base, shared_pool=pool, container_id=container_id,
                    placement=base.placement(container_id, pool), reason=reason)

    def _finish(self, result: Ledger, container_id: str | None,
                placement: Placement | None, reason: str, *,
                moves: tuple[ContainerUpdate, ...] = ()) -> Plan:
        """Add the shared-pool updates, refuse an empty pool, and wrap it all in a plan."""
        # What containers run on now is the committed pool, even when `working` dropped a
        # container being re-created: updates must name the true previous CPUs for rollback.
        before = self.shared_pool()
        after = shared_pool(self._topology, result.reserved, self._settings)
        others = result.shared
        if container_id is not None and result.entries[container_id].kind is Kind.SHARED:
            others = tuple(cid for cid in others if cid != container_id)
        # Refuse a change that empties the pool, or shrinks it below the operator's minimum.
        # One that finds it already there (a state a synchronize reported and could not avoid)
        # is not refused: a release must never fail.
        subject = result.entries[container_id].subject if container_id else reason
        if before and not after and others:
            raise SharedPoolExhaustedError(
                subject, f"{len(others)} shared container(s) would have no CPU left")
        floor = self._settings.min_shared_pool
        if len(after) < floor and len(after) < len(before):
            raise SharedPoolBelowMinimumError(subject, len(after), floor)
        change = PoolChange(before, after, others) if after != before and others else None
        return Plan(base=self._ledger, result=result, shared_pool=after,
                    container_id=container_id, placement=placement, reason=reason,
                    moves=moves, pool_change=change)

