"""An in-memory host: a topology, a runtime that records containers, and injectable failures.

For fast tests and for dry runs (``nri-cpuset plan``). It plays both sides the real runtime
plays: it is the :class:`~cpuset_core.ports.ContainerUpdater` the engine's updates go to, and
:class:`DryRunRuntime` drives a :class:`~cpuset_core.ports.RuntimeEvents` implementation through
the container lifecycle the way containerd's NRI does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import attrs

from cpuset_core import (
    ContainerFacts,
    ContainerUpdate,
    CPUSet,
    Plan,
    PodFacts,
    RuntimeEvents,
    Topology,
    UpdateOutcome,
    apply_transaction,
)


@attrs.define
class DryRunContainer:
    """A container as the fake runtime holds it: its facts and its live cpuset."""

    facts: ContainerFacts
    cpus: CPUSet | None
    """``None`` = never set (the container may use every CPU of its parent)."""
    mems: CPUSet | None = None

    def reported(self) -> ContainerFacts:
        """The facts with the live cpuset, as a runtime reports them at Synchronize."""
        return dataclasses.replace(self.facts,
                                   cpus="" if self.cpus is None else self.cpus.format(),
                                   mems="" if self.mems is None else self.mems.format())

    def place(self, cpus: CPUSet, mems: CPUSet | None) -> None:
        """Set the container's cpuset as the runtime does: ``mems`` ``None`` leaves its
        ``cpuset.mems`` as they are (NRI's empty string), never unset."""
        self.cpus = cpus
        if mems is not None:
            self.mems = mems


@attrs.define
class DryRunHost:
    """Holds pods and containers in memory and applies live updates to them.

    ``fail_updates_for(cid, times)`` makes the next ``times`` batches that touch ``cid`` fail the
    way containerd's do: the other updates of the batch are applied, the failing one is not, and
    the outcome names every container of the batch (the runtime cannot say which failed).
    """

    topology: Topology
    pods: dict[str, PodFacts] = attrs.field(factory=dict)
    containers: dict[str, DryRunContainer] = attrs.field(factory=dict)
    batches: list[tuple[ContainerUpdate, ...]] = attrs.field(factory=list)
    _failures: dict[str, int] = attrs.field(factory=dict)

    # -- TopologySource ------------------------------------------------------------------------

    def read_topology(self) -> Topology:
        return self.topology

    # -- ContainerUpdater ----------------------------------------------------------------------

    def apply(self, updates: Sequence[ContainerUpdate]) -> UpdateOutcome:
        batch = tuple(updates)
        self.batches.append(batch)
        failing = [u.container_id for u in batch if self._failures.get(u.container_id, 0) > 0]
        for cid in failing:
            self._failures[cid] -= 1
        for update in batch:
            container = self.containers.get(update.container_id)
            if container is None or update.container_id in failing:
                continue  # unknown ids count as applied, like containerd
            container.place(update.cpus, update.mems)
        if failing:
            return UpdateOutcome(failed=tuple(u.container_id for u in batch),
                                 detail=f"injected failure for {', '.join(failing)}")
        return UpdateOutcome()

    def fail_updates_for(self, container_id: str, times: int = 1) -> None:
        """Make the next ``times`` batches that include ``container_id`` fail."""
        self._failures[container_id] = self._failures.get(container_id, 0) + times

    # -- what the runtime knows ----------------------------------------------------------------

    def add_pod(self, pod: PodFacts) -> None:
        self.pods[pod.sandbox_id] = pod

    def start_unmanaged(self, facts: ContainerFacts) -> None:
        """Start a container without telling any plugin (as before the plugin came up)."""
        self.containers[facts.id] = DryRunContainer(facts, _parse(facts.cpus), _parse(facts.mems))

    def reported_containers(self) -> list[ContainerFacts]:
        return [c.reported() for c in self.containers.values()]


def _parse(text: str) -> CPUSet | None:
    return CPUSet.parse(text) if text.strip() else None


@attrs.define
class DryRunRuntime:
    """Drives the engine through the lifecycle like containerd's NRI, against a DryRunHost.

    * create: plan; apply the plan's live updates as one all-or-nothing transaction; only then
      commit and start the container with its placement. Any error leaves everything as it was.
    * stop/remove: release and commit at once (the container is gone whatever happens), then
      apply the pool updates best effort; containers whose update failed are listed in
      ``drifted`` until the next synchronize corrects them.
    """

    host: DryRunHost
    engine: RuntimeEvents
    drifted: set[str] = attrs.field(factory=set)

    def synchronize(self) -> Plan:
        plan = self.engine.plan_synchronize(self.host.pods.values(),
                                            self.host.reported_containers())
        apply_transaction(self.host, plan.updates, "synchronize")
        self.engine.commit(plan)
        self.drifted.clear()
        return plan

    def create_container(self, pod: PodFacts, facts: ContainerFacts) -> Plan:
        self.host.add_pod(pod)
        plan = self.engine.plan_create(pod, facts)
        apply_transaction(self.host, plan.updates, f"{pod.namespace}/{pod.name}/{facts.name}")
        self.engine.commit(plan)
        placement = plan.placement
        assert placement is not None  # a create plan always places its container
        self.host.containers[facts.id] = DryRunContainer(facts, placement.cpus, placement.mems)
        return plan

    def resize_container(self, pod: PodFacts, facts: ContainerFacts) -> Plan:
        """An in-place resize (CRI UpdateContainerResources): the other containers' updates
        as one all-or-nothing transaction, then the container itself; any error leaves
        everything as it was."""
        plan = self.engine.plan_resize(pod, facts)
        apply_transaction(self.host, plan.updates, f"{pod.namespace}/{pod.name}/{facts.name}")
        self.engine.commit(plan)
        placement = plan.placement
        assert placement is not None  # a resize plan always places its container
        live = self.host.containers[facts.id]
        live.facts = facts
        # A placement without mems (not a pin) leaves the container's memory nodes as they
        # are, as on the real runtime: unsetting them would change what a rollback restores.
        live.place(placement.cpus, placement.mems)
        return plan

    def remove_container(self, container_id: str) -> Plan:
        plan = self.engine.plan_release(container_id)
        self.engine.commit(plan)
        self.host.containers.pop(container_id, None)
        outcome = self.host.apply(plan.updates) if plan.updates else UpdateOutcome()
        self.drifted.update(c for c in outcome.failed if c in self.host.containers)
        return plan
