"""The NRI handler: turns runtime events into engine decisions and NRI answers.

Each hook is synchronous and does no I/O: it classifies and plans through the core, commits, and
returns the new container's adjustment and the updates that ride on the response. What cannot
ride on a response goes to the :class:`UpdatePusher`. Every decision is logged with
``namespace/pod/container``, a short container id, kind, cpus, mems and the reason.

Where updates go, and what "all-or-nothing" means here:

* CreateContainer: the new container's cpuset is the adjustment; moves of integer containers
  and shared-pool changes ride on the response, ordered so each step is safe, because NRI lets
  no plugin call UpdateContainers during an event. containerd applies them before creating the
  container and only logs their failures (fact sheet §6.1): the protocol gives the plugin no way
  to learn of them or to fail the creation because of them. The next Synchronize repairs such
  drift (detecting it between synchronizes is issue 7's drift work).
* StopContainer: CPUs are released at stop and the pool growth rides on the response.
* RemoveContainer: releases again (a no-op after a stop) and hands any growth to the pusher.
* UpdateContainer (kubelet UpdateContainerResources): the container's own cpuset is re-asserted,
  because the kubelet's values would otherwise replace it (§6.2).
* Synchronize: the ledger is rebuilt; corrections ride on the response. What the runtime
  reported is compared with the result: drift the corrections repair and drift they cannot are
  counted (``drift_repaired``, ``drift_unrepaired``), and each unrepaired container is logged.
* StopPodSandbox / RemovePodSandbox: every container of the pod still in the ledger is released
  (a container created but never started must not keep its CPUs when its pod goes); on removal
  the CPUs the pod's completed containers left behind are forgotten.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence

from cpuset_adapters.nri import translate
from cpuset_adapters.nri.decision_log import decision, mems_text, short_id
from cpuset_adapters.nri.handler_port import Event, HandlerError, RuntimeInfo
from cpuset_adapters.nri.observer import NO_OBSERVER, Observer
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.pusher import UpdatePusher
from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    ContainerUpdate,
    CpusetEngine,
    Kind,
    Plan,
    PodFacts,
    Topology,
    classify,
    violations,
)
from cpuset_core.drift import DriftReport, assess
from cpuset_core.model import subject_of

_log = logging.getLogger("nri_cpuset.decisions")

HISTORY_LIMIT = 20
"""Events remembered per container: enough to explain it, bounded for long-lived nodes."""

EVENTS = frozenset({Event.CREATE_CONTAINER, Event.UPDATE_CONTAINER, Event.STOP_CONTAINER,
                    Event.REMOVE_CONTAINER, Event.STOP_POD_SANDBOX, Event.REMOVE_POD_SANDBOX})

__all__ = ["EVENTS", "HISTORY_LIMIT", "CpusetNriHandler", "short_id"]


class CpusetNriHandler:
    """Implements :class:`~cpuset_adapters.nri.handler_port.NriHandler` with the core engine."""

    def __init__(self, engine: CpusetEngine, pusher: UpdatePusher, *,
                 observer: Observer = NO_OBSERVER) -> None:
        self._engine = engine
        self._pusher = pusher
        self._observer = observer
        self.runtime: RuntimeInfo | None = None
        self.synchronized = False
        self.on_configured: Callable[[RuntimeInfo], None] | None = None
        """Called (on the event loop, no I/O) after each Configure; the daemon uses it."""
        self._history: dict[str, list[str]] = {}
        self._moved_by: dict[str, tuple[str, ...]] = {}
        """Containers each creation moved: if the creation failed later (another plugin, a
        validator), containerd applied none of those moves, and the Stop it then sends must
        put them where the ledger says."""
        self.updates_on_responses: Counter[str] = Counter()
        """Live updates per container carried on event responses (since start)."""
        self.drift_repaired = 0
        """Containers a synchronize found off their placement and corrected (since start)."""
        self.drift_unrepaired = 0
        """Containers a synchronize found off their placement and could not correct."""

    def history(self) -> dict[str, list[str]]:
        """What happened to each live container, oldest first (``explain`` shows it)."""
        return {cid: list(events) for cid, events in self._history.items()}

    def _remember(self, container_id: str, event: str) -> None:
        events = self._history.setdefault(container_id, [])
        events.append(event)
        del events[:-HISTORY_LIMIT]

    @property
    def engine(self) -> CpusetEngine:
        """The engine behind the decisions (read its ledger; do not plan through it)."""
        return self._engine

    @property
    def decided(self) -> bool:
        """Whether any container has been decided or adopted since start."""
        return self.synchronized or bool(self._engine.ledger.entries) or bool(self._history)

    def replace_engine(self, engine: CpusetEngine) -> None:
        """Decide with ``engine`` from now on: a pre-installed plugin's configuration arrives in
        Configure, before any decision, and may change settings a running engine keeps (the
        reservation, the pin annotation). Raises ``RuntimeError`` once anything was decided."""
        if self.decided:
            raise RuntimeError("the engine cannot be replaced after the first decision")
        self._engine = engine
        self._pusher.replace_engine(engine)

    def subscribed_events(self) -> frozenset[Event]:
        return EVENTS

    def on_configure(self, info: RuntimeInfo) -> None:
        self.runtime = info
        _log.info("configured by %s %s (NRI %s, request timeout %d ms)", info.runtime_name,
                  info.runtime_version, info.nri_version or "unknown", info.request_timeout_ms)
        if self.on_configured is not None:
            self.on_configured(info)

    def on_synchronize(self, pods: Sequence[pb.PodSandbox],
                       containers: Sequence[pb.Container]) -> Sequence[pb.ContainerUpdate]:
        pod_facts = [translate.pod_facts(p) for p in pods]
        facts = [translate.container_facts(c) for c in containers]
        plan = self.adopt(pod_facts, facts, source="synchronize")
        self.record_drift(assess(plan, pod_facts, facts), source="synchronize")
        changes = translate.response_order(plan)
        self._record(changes)
        return translate.updates(changes)

    def adopt(self, pods: Sequence[PodFacts], containers: Sequence[ContainerFacts], *,
              source: str) -> Plan:
        """Rebuild the ledger from every live pod and container (a Synchronize, or an inventory
        taken over CRI when the runtime does not synchronize) and commit it; return the plan,
        whose updates correct the running containers."""
        plan = self._engine.plan_synchronize(pods, containers)
        self._engine.commit(plan)
        self.synchronized = True
        self._history = {cid: events for cid, events in self._history.items()
                         if cid in plan.result}
        for cid, entry in plan.result.entries.items():
            if cid not in self._history:
                self._remember(cid, f"found at {source}: {entry.kind.value} ({entry.reason})")
        for change in plan.moves:
            self._remember(change.container_id, f"corrected at {source}: "
                                                f"{change.previous_cpus} -> {change.cpus}")
        self._report(plan, source)
        self._pusher.reset()
        _log.info("synchronized %d pod(s), %d container(s) from %s: %d correction(s), shared "
                  "pool %s", len(pods), len(containers), source, len(plan.updates),
                  plan.shared_pool)
        return plan

    def record_drift(self, report: DriftReport, *, source: str) -> None:
        """Count a synchronize's drift and log every container left off its placement."""
        self.drift_repaired += len(report.repaired)
        self.drift_unrepaired += len(report.unrepaired)
        for drifted in report.unrepaired:
            _log.warning("drift unrepaired %s id=%s reported=%s expected=%s source=%s "
                         "reason=%s", drifted.subject, short_id(drifted.container_id),
                         drifted.reported or "unset", drifted.expected or "none", source,
                         drifted.why)
        if report.repaired:
            _log.info("drift repaired at %s: %s", source,
                      ", ".join(f"{d.subject} ({short_id(d.container_id)}) "
                                f"{d.reported or 'unset'} -> {d.expected}"
                                for d in report.repaired))

    def adopt_topology(self, topology: Topology) -> Plan:
        """CPUs went offline or came back (the hotplug watcher read ``topology``): re-place
        every container, commit, and return the plan, whose updates the caller applies."""
        before = self._engine.topology.online
        plan = self._engine.plan_topology_change(topology)
        self._engine.commit(plan)
        for change in plan.moves:
            self._remember(change.container_id, f"moved at topology change: "
                                                f"{change.previous_cpus} -> {change.cpus}")
        self._report(plan, "topology change")
        _log.warning("online CPUs %s -> %s: %d live update(s), shared pool %s", before,
                     topology.online, len(plan.updates), plan.shared_pool)
        return plan

    def on_create_container(self, pod: pb.PodSandbox, container: pb.Container,
                            ) -> tuple[pb.ContainerAdjustment | None, Sequence[pb.ContainerUpdate]]:
        facts = translate.container_facts(container)
        pod_facts = translate.pod_facts(pod)
        try:
            plan = self._engine.plan_create(pod_facts, facts)
        except AdmissionError as error:
            kind = self._kind_of_rejected(pod_facts, facts)
            self._observer.admission(kind, "rejected", error.reason)
            decision(_log, logging.WARNING,
                     f"reject {error.subject} id={short_id(container.id)} kind={kind.value} "
                     f"reason={error.reason}: {error.detail}", action="reject",
                     container=error.subject, container_id=container.id, kind=kind, cpus=None,
                     mems=None, reason=error.reason)
            raise HandlerError(f"nri-cpuset: {error}") from error
        self._engine.commit(plan)
        placement = plan.placement
        assert placement is not None  # a create plan always places its container
        self._observer.admission(placement.kind, "admitted", "")
        changes = translate.response_order(plan)
        self._record(changes, moves=len(plan.moves))
        self._pusher.record_applied(container.id, placement.cpus, placement.mems)
        self._history.pop(container.id, None)
        self._remember(container.id, f"created: {placement.kind.value} cpus={placement.cpus}"
                                     f" mems={placement.mems or 'default'} ({plan.reason})")
        for move in plan.moves:
            self._remember(move.container_id,
                           f"moved {move.previous_cpus} -> {move.cpus}: {move.reason}")
            decision(_log, logging.INFO,
                     f"move {move.subject} id={short_id(move.container_id)} "
                     f"kind={move.kind.value} cpus={move.previous_cpus} -> {move.cpus} "
                     f"reason={move.reason}", action="move", container=move.subject,
                     container_id=move.container_id, kind=move.kind, cpus=move.cpus,
                     mems=move.mems, reason=move.reason)
        if plan.moves:
            self._moved_by[container.id] = tuple(m.container_id for m in plan.moves)
        subject = subject_of(pod_facts, facts)
        decision(_log, logging.INFO,
                 f"admit {subject} id={short_id(container.id)} kind={placement.kind.value} "
                 f"cpus={placement.cpus} mems={mems_text(placement.mems)} "
                 f"reason={plan.reason}; {len(changes)} live update(s)", action="admit",
                 container=subject, container_id=container.id, kind=placement.kind,
                 cpus=placement.cpus, mems=placement.mems, reason=plan.reason)
        return translate.adjustment(placement), translate.updates(changes)

    def on_update_container(self, pod: pb.PodSandbox, container: pb.Container,
                            resources: pb.LinuxResources) -> Sequence[pb.ContainerUpdate]:
        """An in-place resize: re-decide the container's cpuset from its new limits. The
        container's own update goes last (the runtime applies the others first, then this one
        in place of the kubelet's values, which would otherwise replace our cpuset, §6.2)."""
        if container.id not in self._engine.ledger:
            # Stopped (released at stop) or never seen: a resize must not (re)admit it and
            # reserve CPUs for a container that may be dead.
            return []
        facts = translate.resized(translate.container_facts(container), resources)
        try:
            plan = self._engine.plan_resize(translate.pod_facts(pod), facts)
        except AdmissionError as error:
            _log.warning("reject resize of %s id=%s reason=%s: %s", error.subject,
                         short_id(container.id), error.reason, error.detail)
            raise HandlerError(f"nri-cpuset: {error}") from error
        self._engine.commit(plan)
        placement = plan.placement
        if placement is None or not placement.cpus:
            # An empty cpuset cannot be set (the runtime ignores ""): say so, change nothing.
            _log.warning("update of %s/%s/%s id=%s: no CPU to give it (empty shared pool)",
                         pod.namespace, pod.name, container.name, short_id(container.id))
            return []
        changes = translate.response_order(plan)
        self._record(changes)
        self._pusher.record_applied(container.id, placement.cpus, placement.mems)
        if plan.changes_ledger:
            self._remember(container.id, f"resized: {placement.kind.value} cpus="
                                         f"{placement.cpus} ({plan.reason})")
            subject = f"{pod.namespace}/{pod.name}/{container.name}"
            decision(_log, logging.INFO,
                     f"resize {subject} id={short_id(container.id)} "
                     f"kind={placement.kind.value} cpus={placement.cpus} reason={plan.reason}; "
                     f"{len(changes)} live update(s)", action="resize", container=subject,
                     container_id=container.id, kind=placement.kind, cpus=placement.cpus,
                     mems=placement.mems, reason=plan.reason)
        self.updates_on_responses[container.id] += 1
        return [*translate.updates(changes),
                translate.container_update(container.id, placement.cpus, placement.mems)]

    def on_stop_container(self, pod: pb.PodSandbox,
                          container: pb.Container) -> Sequence[pb.ContainerUpdate]:
        reasserted = self._reassert_moves_of(container.id)
        plan = self._release(pod, container, "stop")
        reasserted_ids = {r.container_id for r in reasserted}
        changes = [u for u in translate.response_order(plan)
                   if u.container_id not in reasserted_ids]
        self._record(changes)
        # Moved containers first: they leave CPUs the growing shared containers then take.
        return [*reasserted, *translate.updates(changes)]

    def on_remove_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        plan = self._release(pod, container, "remove")
        self._forget(container.id)
        self._pusher.mark_dirty(u.container_id for u in plan.updates)

    def _reassert_moves_of(self, container_id: str) -> list[pb.ContainerUpdate]:
        """Updates that put every container this one's creation moved where the ledger says
        (a no-op when containerd applied the moves)."""
        updates = []
        for moved in self._moved_by.pop(container_id, ()):
            placement = self._engine.placement(moved)
            if placement is not None and placement.cpus:
                updates.append(translate.container_update(moved, placement.cpus,
                                                          placement.mems))
        return updates

    def on_pod_sandbox_gone(self, pod: pb.PodSandbox, *, removed: bool) -> None:
        """Release whatever the pod still holds; its freed CPUs go out through the pusher
        (neither event's response carries updates)."""
        plan = self._engine.plan_release_pod(pod.id)
        self._engine.commit(plan)
        if removed:
            self._engine.forget_pod(pod.id)
        gone = plan.base.entries.keys() - plan.result.entries.keys()
        for cid in gone:
            self._history.pop(cid, None)
            self.updates_on_responses.pop(cid, None)
            self._forget(cid)
        self._pusher.mark_dirty(u.container_id for u in plan.updates)
        if gone:
            _log.info("release %d container(s) of pod %s/%s on %s: %s; shared pool %s",
                      len(gone), pod.namespace, pod.name,
                      "RemovePodSandbox" if removed else "StopPodSandbox",
                      ", ".join(sorted(short_id(cid) for cid in gone)), plan.shared_pool)

    def on_disconnect(self) -> None:
        self.synchronized = False
        self._pusher.reset()
        _log.warning("runtime connection lost; state is rebuilt at the next Synchronize")

    # -- helpers -------------------------------------------------------------------------------

    def _report(self, plan: Plan, source: str) -> None:
        """Log what a rebuild (synchronize, inventory, topology change) could not place as
        asked, and any invariant the committed ledger breaks."""
        for problem in plan.problems:
            _log.warning("%s: %s (%s)", source, problem, problem.reason)
        for broken in violations(self._engine.topology, self._engine.ledger,
                                 self._engine.settings):
            _log.error("%s: invariant %s", source, broken)

    def _forget(self, container_id: str) -> None:
        """The container is gone: the pusher drops it, and re-sends whatever its creation
        moved (a failed creation's moves may never have been applied)."""
        self._pusher.forget(container_id)
        self._pusher.force(self._moved_by.pop(container_id, ()))

    def _release(self, pod: pb.PodSandbox, container: pb.Container, why: str) -> Plan:
        released = self._engine.placement(container.id)
        plan = self._engine.plan_release(container.id)
        self._engine.commit(plan)
        self._history.pop(container.id, None)
        self.updates_on_responses.pop(container.id, None)
        if plan.changes_ledger and released is not None:
            subject = f"{pod.namespace}/{pod.name}/{container.name}"
            decision(_log, logging.INFO,
                     f"release {subject} id={short_id(container.id)} on {why}: "
                     f"kind={released.kind.value} cpus={released.cpus}; shared pool "
                     f"{plan.shared_pool}; {len(plan.updates)} live update(s)",
                     action="release", container=subject, container_id=container.id,
                     kind=released.kind, cpus=released.cpus, mems=released.mems, reason=why)
        return plan

    def _record(self, changes: Sequence[ContainerUpdate], *, moves: int = 0) -> None:
        """Remember what an event response sets; ``moves`` of ``changes`` are moves (already
        logged as such), the rest are logged here at debug (one per container: shared-pool
        changes can touch every shared container)."""
        # Checked once: a pool change touches every shared container, and the messages are
        # not worth building when debug is off.
        debug = _log.isEnabledFor(logging.DEBUG)
        for change in changes:
            self._pusher.record_applied(change.container_id, change.cpus, change.mems)
            self.updates_on_responses[change.container_id] += 1
            if not debug:
                continue
            decision(_log, logging.DEBUG,
                     f"update {change.subject} id={short_id(change.container_id)} "
                     f"kind={change.kind.value} cpus={change.cpus} "
                     f"mems={mems_text(change.mems)} "
                     f"reason={change.reason}", action="update", container=change.subject,
                     container_id=change.container_id, kind=change.kind, cpus=change.cpus,
                     mems=change.mems, reason=change.reason)
        if changes:
            self._observer.response_updates(len(changes), moves)

    def _kind_of_rejected(self, pod: PodFacts, container: ContainerFacts) -> Kind:
        """The kind a rejected container asked to be (for the admissions metric)."""
        try:
            return classify(pod, container, self._engine.settings).kind
        except AdmissionError:  # classification only fails on the pin annotation
            return Kind.ANNOTATED
