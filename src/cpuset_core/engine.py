"""The engine: the use cases (synchronize, create, release) as plans over the ledger.

Every use case returns a :class:`~cpuset_core.plan.Plan` and changes nothing; :meth:`commit`
makes a plan current. Callers that apply live updates first (see ``transaction``) commit only
when the runtime accepted all of them, so a failure leaves the ledger as it was. The engine keeps
the state between events; each admission, resize or release is planned by a ``planner`` over a
snapshot of it, each rebuild by ``sync`` or ``hotplug``.
"""

from __future__ import annotations

from collections.abc import Iterable

from cpuset_core.cpuset import CPUSet
from cpuset_core.draining import Draining
from cpuset_core.errors import StalePlanError
from cpuset_core.hotplug import replan
from cpuset_core.ledger import Ledger
from cpuset_core.model import ContainerFacts, Placement, PodFacts
from cpuset_core.plan import Plan
from cpuset_core.planner import ChangePlanner
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.policy.shared import reserved_pool, shared_pool
from cpuset_core.reuse import LeftBehind
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

    def reserved_pool(self) -> CPUSet:
        """The CPUs containers on the reserved CPUs run on (``reserved_namespaces``,
        ``reserved-cpus``): the reserved CPUs online and not isolated."""
        return reserved_pool(self._topology, self._settings)

    def placement(self, container_id: str) -> Placement | None:
        """Where the committed ledger says the container runs (``None`` if unknown)."""
        return self._ledger.placement(container_id, self.shared_pool(), self.reserved_pool())

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
        return self._planner().create(pod, container)

    def plan_resize(self, pod: PodFacts, container: ContainerFacts) -> Plan:
        """Decide a running container's placement after an in-place resize (the runtime's
        UpdateContainer, i.e. CRI UpdateContainerResources with the new limits).

        An integer container that shrinks keeps the best-shaped subset of its CPUs; one that
        grows keeps its CPUs and gets more next to them; a container that changes class
        (integer ↔ shared) is placed afresh; a pinned container keeps its pin, and so does a
        running container whose pin annotation is not (or no longer) allowed or valid: it
        keeps where it runs (shared, when a Synchronize ran it so). The plan's
        placement is the container's new cpuset. Raises an :class:`AdmissionError` subclass
        (and changes nothing) when the new size cannot be satisfied.
        """
        return self._planner().resize(pod, container)

    def plan_release(self, container_id: str) -> Plan:
        """Release a stopped or removed container's CPUs; unknown ids give an empty plan, so a
        stop followed by a remove releases exactly once."""
        entry = self._ledger.get(container_id)
        if entry is None:
            return self._planner().unchanged()
        return self._planner().release(
            [container_id], f"released {entry.kind.value} container {entry.subject}")

    def plan_release_pod(self, sandbox_id: str) -> Plan:
        """Release every container of a pod that is still in the ledger (the pod is stopping
        or gone: a container created but never started, whose stop or remove the runtime did
        not report, must not keep its CPUs). A pod with none gives an empty plan."""
        entries = self._ledger.entries
        gone = [cid for cid in sorted(entries) if entries[cid].sandbox_id == sandbox_id]
        subjects = ", ".join(entries[cid].subject for cid in gone)
        return self._planner().release(gone, f"released {subjects} with their pod")

    def plan_topology_change(self, topology: Topology) -> Plan:
        """Re-place every container after CPUs went offline or came back online (``topology``
        is the machine as it is now).

        Pins keep their online part and a pin that lost a CPU is reported; integer containers
        that held an offline CPU get new exclusive CPUs; the shared pool follows. Never raises
        for a container: what cannot be placed as it asks is in the plan's ``problems``.
        Committing the plan makes ``topology`` the engine's.
        """
        return replan(topology, self._settings, base=self._ledger,
                      pool_before=self.shared_pool(), reserved_before=self.reserved_pool())

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

    def _planner(self) -> ChangePlanner:
        return ChangePlanner(self._topology, self._settings, self._allocator, self._ledger,
                             self._draining, self._left_behind,
                             reuse_released=not self._confirm_releases)
