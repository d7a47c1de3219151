"""The placement service: every use case, for every source of change, in one place.

A runtime adapter (NRI), the CRI inventory and the hotplug watcher call it; it plans through the
engine, commits, records each decision once (:class:`DecisionJournal`: the container's history
and the decision log), reports to the observer (statistics, metrics), fills the runtime's answers
(:class:`AnswerUpdates`) and hands what cannot ride on them to the background updates
(:class:`UpdatePusher`).

Calls are synchronous and fast: a runtime waits for the answer of the ones made from its hooks.
They do no I/O of their own; with the kernel fast path the pusher's ``KernelFirst`` writes other
containers' cpusets through its updater port before the answer (microseconds per container).
Admission errors are logged, counted and raised again for the adapter to turn into its
runtime's error.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    ContainerUpdate,
    CpusetEngine,
    Ledger,
    Placement,
    Plan,
    PodFacts,
    Settings,
    Topology,
)
from cpuset_core.drift import DriftReport, assess
from cpuset_core.model import subject_of
from cpuset_core.quota import ExclusiveQuota
from cpuset_service import rebuild_log
from cpuset_service.answers import (
    Admission,
    AnswerUpdates,
    Synchronized,
    kind_asked,
    response_order,
)
from cpuset_service.cgroup_paths import CgroupPaths
from cpuset_service.journal import DecisionJournal
from cpuset_service.moves import MovedBy
from cpuset_service.notices import NO_NOTICES, Notices
from cpuset_service.observer import NO_OBSERVER, FanOut, Observer
from cpuset_service.pusher import UpdatePusher
from cpuset_service.quiet import QuietCpus
from cpuset_service.quota_lifts import QuotaLifts
from cpuset_service.starts import StartCases
from cpuset_service.statistics import Statistics


class PlacementService:
    """Owns the engine; not thread-safe (one caller at a time: the event loop)."""

    def __init__(self, engine: CpusetEngine, *, observer: Observer = NO_OBSERVER) -> None:
        self._engine = engine
        self.statistics = Statistics()
        self.observer: Observer = FanOut(self.statistics, observer)
        """Where decisions and sends are reported: the statistics, then ``observer`` (e.g.
        the metrics); staged sends made for the service report here too."""
        self.pusher = UpdatePusher(self, observer=self.observer)
        """The background updates: the daemon runs it with its runtime's sender."""
        self.synchronized = False
        """Whether the state was rebuilt from the runtime on this connection."""
        self._journal = DecisionJournal()
        self._answers = AnswerUpdates(self.pusher, self._journal, self.observer)
        self._cgroups = CgroupPaths()
        self._moved_by = MovedBy()
        self.starts = StartCases(self, self._journal, self.observer)
        """Containers placed and not seen to start: the rule that gives back what those that
        will not run hold (its probe and grace are set by the composition root)."""
        self.exclusive_quota = ExclusiveQuota.UNLIMITED  # set live by exclusive_cpu_quota
        self.quota = QuotaLifts(self._cgroups.get)  # who runs without quota in the kernel
        self.quiet = QuietCpus()  # its node port is set by the composition root (issue 43)
        self.notices: Notices = NO_NOTICES
        """Who is told of decisions about pods beyond the log (Kubernetes Events; set by
        the composition root)."""

    # -- what is decided -------------------------------------------------------------------------

    @property
    def engine(self) -> CpusetEngine:
        """The engine behind the decisions (read it; plan only through this service)."""
        return self._engine

    @property
    def ledger(self) -> Ledger:
        return self._engine.ledger

    def placement(self, container_id: str) -> Placement | None:
        return self._engine.placement(container_id)

    def cgroup_paths(self) -> dict[str, str]:
        """Container id → cgroup path, for the containers the ledger holds whose runtime
        said where their cgroup is."""
        return self._cgroups.of(self._engine.ledger)

    def cgroup_path(self, container_id: str) -> str | None:
        """The container's cgroup path as its runtime said (``None``: not said)."""
        return self._cgroups.get(container_id)

    def history(self) -> dict[str, list[str]]:
        """What happened to each live container, oldest first (``explain`` shows it)."""
        return self._journal.history.copy()

    @property
    def decided(self) -> bool:
        """Whether any container has been decided or adopted since start."""
        return self.synchronized or bool(self._engine.ledger.entries) or bool(self._journal.history)

    # -- settings --------------------------------------------------------------------------------

    def reconfigure(self, settings: Settings) -> None:
        """Apply live settings to the decisions that follow (``CpusetEngine.reconfigure``)."""
        self._engine.reconfigure(settings)

    def replace_engine(self, settings: Settings) -> bool:
        """Decide with a new engine for ``settings`` from now on, if nothing was decided yet
        (a pre-installed plugin's configuration arrives in Configure, before any decision, and
        may change settings a running engine keeps); return whether it was replaced."""
        if self.decided:
            return False
        self._engine = CpusetEngine(self._engine.topology, settings,
                                    confirm_releases=self._engine.confirms_releases)
        return True

    # -- creation and resize ---------------------------------------------------------------------

    def admit(self, pod: PodFacts, container: ContainerFacts) -> Admission:
        """Place a container being created; raise the core's :class:`AdmissionError` (logged,
        counted, nothing changed) when it cannot be admitted."""
        try:
            plan = self.starts.planned(lambda: self._engine.plan_create(pod, container))
            plan = self.quiet.checked(plan, self._engine.settings.unmet_requests)
        except AdmissionError as error:
            kind = kind_asked(pod, container, self._engine.settings)
            self.observer.admission(kind, "rejected", error.reason)
            self._journal.rejected("reject", error, container.id, kind)
            raise
        self._engine.commit(plan)
        self._cgroups.remember(container)
        self.starts.placed(container.id)
        placement = plan.placement
        assert placement is not None  # a create plan always places its container
        self.observer.admission(placement.kind, "admitted", "")
        updates = self._answers.fill(response_order(plan), container.id, records=False,
                                     moves={m.container_id for m in plan.moves})
        self.pusher.record_applied(container.id, placement.cpus, placement.mems)
        if plan.moves:
            self._moved_by.remember(container.id, plan.moves)
        quota = self.quota.decide(container.id, placement, self.exclusive_quota)
        self._journal.admitted(subject_of(pod, container), container.id, plan, placement,
                               len(updates), quota=quota)
        self.notices.admitted(pod, container, plan, self._engine.topology)
        return Admission(placement, updates)

    def resize(self, pod: PodFacts, container: ContainerFacts) -> Admission | None:
        """Re-decide a running container's cpuset from its new limits (``container`` carries
        them). ``None`` when there is nothing to set: a container not in the ledger (stopped,
        or never seen — a resize must not admit it) or an empty shared pool. Raises
        :class:`AdmissionError` (logged, nothing changed) when the new size cannot be met."""
        if container.id not in self._engine.ledger:
            return None
        try:
            plan = self.starts.planned(lambda: self._engine.plan_resize(pod, container))
        except AdmissionError as error:
            self._journal.rejected("reject resize", error, container.id, None)
            self.notices.resize_refused(container.id, error)
            raise
        self._engine.commit(plan)
        placement = plan.placement
        subject = subject_of(pod, container)
        if placement is None or not placement.cpus:
            # An empty cpuset cannot be set (the runtime ignores ""): say so, change nothing.
            self._journal.resize_without_cpus(subject, container.id)
            return None
        updates = self._answers.fill(response_order(plan), container.id)
        self.pusher.record_applied(container.id, placement.cpus, placement.mems)
        self.statistics.response_updates([container.id], 0)  # its own, last in the answer
        quota = self.quota.decide(container.id, placement, self.exclusive_quota)
        if plan.changes_ledger:
            self._journal.resized(subject, container.id, plan, placement, len(updates),
                                  quota=quota)
            self.notices.resized(container.id, plan, self._engine.topology)
        return Admission(placement, updates)

    # -- release ---------------------------------------------------------------------------------

    def stop(self, container_id: str, subject: str) -> list[ContainerUpdate]:
        """The container stopped: release it; return the updates for its answer — the
        containers its creation moved first (re-asserted), then as much of the shared pool's
        growth as one answer carries (the pusher's batch; the rest follows in the background,
        so that 500 growing containers do not hold the runtime's other events)."""
        reasserted = self._moved_by.reasserted(container_id, self._engine)
        plan = self._release(container_id, subject, "stop")
        self.starts.stopped(container_id)
        self.pusher.kernel.forgotten(container_id)  # no kept file may pin its cgroup once gone
        moved = {r.container_id for r in reasserted}
        _written, reasserted = self._answers.kernel_first(reasserted)
        _grown, growth = self._answers.kernel_first(  # the pool's growth; what the kernel
            [u for u in plan.updates if u.container_id not in moved])  # refuses rides
        self.pusher.refused(u.container_id for u in growth)
        updates = self._answers.fill([], container_id, *moved)
        # Moved containers first: they leave CPUs the growing shared containers then take.
        return [*reasserted, *updates]

    def remove(self, container_id: str, subject: str, why: str = "remove") -> None:
        """The container was removed (also after a failed creation), or will not run (``why``
        says so): release it (a no-op after a stop); any growth goes out in the
        background."""
        plan = self._release(container_id, subject, why)
        self._forget(container_id)
        self.pusher.mark_dirty(u.container_id for u in plan.updates)

    def release_pod(self, sandbox_id: str, subject: str, *, removed: bool) -> None:
        """The pod stopped (``removed=False``) or was removed: release whatever it still holds
        (a container created but never started must not keep its CPUs); on removal forget the
        CPUs its completed containers left behind. Growth goes out in the background."""
        plan = self._engine.plan_release_pod(sandbox_id)
        self._engine.commit(plan)
        if removed:
            self._engine.forget_pod(sandbox_id)
        gone = sorted(plan.base.entries.keys() - plan.result.entries.keys())
        for cid in gone:
            self._forget(cid)
        self.pusher.mark_dirty(u.container_id for u in plan.updates)
        if gone:
            self._journal.pod_released(subject, plan, gone, removed=removed)

    # -- rebuilds --------------------------------------------------------------------------------

    def synchronize(self, pods: Sequence[PodFacts], containers: Sequence[ContainerFacts], *,
                    source: str, caller_applies: bool = False,
                    keep_unlisted: bool = False, unstarted: Collection[str] = ()
                    ) -> Synchronized:
        """Rebuild the ledger from every live pod and container (a Synchronize, or an inventory
        taken over CRI) and commit it; return it with the updates that correct the running
        containers (riding on the runtime's answer unless ``caller_applies``). The drift its
        corrections repair and the drift they cannot are counted and logged now — or, with
        ``caller_applies`` (the caller sends the corrections itself and may fail), by
        :meth:`corrections_applied` once it knows. ``keep_unlisted``: containers decided but
        not in the report keep their placement (a report that may lag the runtime's hooks).
        ``unstarted``: the containers the report says were created and are not running (they
        wait for their start)."""
        plan = self._engine.plan_synchronize(pods, containers, keep_unlisted=keep_unlisted)
        self._engine.commit(plan)
        self.starts.adopted([c.id for c in containers], unstarted, plan.result.entries)
        self.synchronized = True
        self.quota.adopt(self._engine, self.exclusive_quota)
        for container in containers:
            self._cgroups.remember(container)
        self._journal.synchronized(plan, source)
        self.notices.synchronized(pods, containers, plan.result)
        self.pusher.reset()
        rebuild_log.problems(plan, self._engine, source)
        rebuild_log.synchronized(plan, source, pods=len(pods), containers=len(containers))
        updates = response_order(plan)
        if not caller_applies:
            self._answers.carried(updates)
            self._record_drift(assess(plan, pods, containers), source=source)
        return Synchronized(plan, updates)

    def corrections_applied(self, plan: Plan, pods: Sequence[PodFacts],
                            containers: Sequence[ContainerFacts], *, source: str,
                            failure: str = "") -> None:
        """The caller sent a synchronize's corrections: count the drift; ``failure`` (why they
        were not applied) leaves every corrected container unrepaired and retried in the
        background."""
        report = assess(plan, pods, containers)
        if failure:
            ids = {u.container_id for u in plan.updates}
            report = report.with_failed(ids, f"the correction failed: {failure}")
            self.pusher.mark_dirty(ids)
        self._record_drift(report, source=source)

    def _record_drift(self, report: DriftReport, *, source: str) -> None:
        self.observer.drift(len(report.repaired), len(report.unrepaired))
        rebuild_log.drift(report, source)

    def topology_changed(self, topology: Topology) -> Plan:
        """CPUs went offline or came back (``topology`` is the machine now): re-place every
        container, commit, and return the plan, whose updates the caller applies."""
        before = self._engine.topology.online
        plan = self._engine.plan_topology_change(topology)
        self._engine.commit(plan)
        self._journal.topology_changed(plan)
        rebuild_log.problems(plan, self._engine, "topology change")
        rebuild_log.topology_changed(plan, before, topology.online)
        return plan

    def disconnected(self) -> None:
        """The runtime connection ended: state is rebuilt at the next synchronize."""
        self.synchronized = False
        self.pusher.reset()

    # -- helpers ---------------------------------------------------------------------------------

    def _release(self, container_id: str, subject: str, why: str) -> Plan:
        released = self._engine.placement(container_id)
        plan = self._engine.plan_release(container_id)
        self._engine.commit(plan)
        self._journal.history.forget(container_id)
        self.statistics.forget([container_id])
        if plan.changes_ledger and released is not None:
            self._journal.released(subject, container_id, released, plan, why)
        return plan

    def _forget(self, container_id: str) -> None:
        """The container is gone: forget it, and re-send whatever its creation moved (a failed
        creation's moves may never have been applied)."""
        self._journal.history.forget(container_id)
        self._cgroups.forget(container_id)
        self.quota.forget(container_id)
        self.starts.forget(container_id)
        self.statistics.forget([container_id])
        self.pusher.forget(container_id)
        self.pusher.force(self._moved_by.take(container_id))
