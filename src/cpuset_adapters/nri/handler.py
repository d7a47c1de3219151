"""The NRI handler: translates each runtime event into a call on the placement service and the
service's answer back into NRI messages. It decides nothing and logs no decision itself.

Where updates go (NRI lets no plugin call UpdateContainers while the runtime waits for an
event's answer, so what cannot ride on an answer goes to the service's background pusher):

* CreateContainer: the new container's cpuset is the adjustment; moves of integer containers
  and shared-pool changes ride on the answer, ordered so each step is safe. containerd applies
  them before creating the container and only logs their failures (fact sheet §6.1).
* UpdateContainer (kubelet UpdateContainerResources): the container's own cpuset is re-asserted
  last, because the kubelet's values would otherwise replace it (§6.2). Neither carries a CFS
  quota: the runtime's record keeps the kubelet's, which the kubelet reports as the
  container's CPU limit (issue 44, decision 54).
* StartContainer and PostUpdateContainer: with exclusive CPUs the container's CFS quota is
  lifted in its cgroup (``cpuset_service.quota_lifts``), since the runtime just wrote the
  record's into the kernel; the verifier repairs what other updates put back.
* StopContainer: released at stop; the containers its creation moved are re-asserted, then the
  pool's growth rides on the answer.
* RemoveContainer, StopPodSandbox, RemovePodSandbox: released; growth goes out in the background.
* StartContainer: the container no longer waits for its start (``cpuset_core.starts``); its
  start is refused if its CPUs were given back for not starting in time.
* Synchronize: the ledger is rebuilt; corrections ride on the answer. A container reported
  created and not running binds no CPU (no process runs on what its record says): it is
  placed afresh after those that run, and waits for its start. With a ``kernel_view``
  (the kernel fast path), each container's cpuset is taken from its cgroup where readable:
  the runtime reports its *record*, which may lag what the plugin wrote into the kernel, and a
  rebuild from a lagging record would move containers back. Containers whose record differed
  get it re-sent in the background.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from cpuset_adapters.device_locality import LocateDevices
from cpuset_adapters.nri import translate
from cpuset_adapters.nri.deadlock import locks_are_safe
from cpuset_adapters.nri.handler_port import Event, HandlerError, RuntimeInfo
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import AdmissionError, ContainerFacts
from cpuset_core.model import parse_reported
from cpuset_core.verify import Observed
from cpuset_service.placement import PlacementService

_log = logging.getLogger("nri_cpuset.nri")

EVENTS = frozenset({Event.CREATE_CONTAINER, Event.START_CONTAINER, Event.UPDATE_CONTAINER,
                    Event.POST_UPDATE_CONTAINER, Event.STOP_CONTAINER, Event.REMOVE_CONTAINER,
                    Event.STOP_POD_SANDBOX, Event.REMOVE_POD_SANDBOX})

__all__ = ["EVENTS", "CpusetNriHandler", "KernelView", "events_for"]

KernelView = Callable[[Mapping[str, str]], Mapping[str, Observed]]
"""Container id → cgroup path in, what each cgroup's cpuset files hold out."""


def events_for(runtime: RuntimeInfo | None) -> frozenset[Event]:
    """The events the plugin subscribes to on ``runtime`` (``None``: not configured yet):
    :data:`EVENTS`, and PostStartContainer where the plugin calls UpdateContainers itself
    (NRI v0.12.1 or later): the runtime's records wait until a start has gone by. The
    benchmarks' no-op plugin subscribes to the same, so NRI's own cost of them is in its
    floor."""
    return EVENTS | {Event.POST_START_CONTAINER} if _sees_starts_end(runtime) else EVENTS


def _sees_starts_end(runtime: RuntimeInfo | None) -> bool:
    """Whether the plugin calls UpdateContainers itself on ``runtime`` (NRI v0.12.1 or later),
    so its records wait for starts to go by."""
    return runtime is not None and locks_are_safe(runtime.nri_version)


class CpusetNriHandler:
    """Implements :class:`~cpuset_adapters.nri.handler_port.NriHandler` on the placement
    service. ``on_configured`` is told (on the event loop, no I/O) after each Configure, and
    ``on_synchronized`` after each Synchronize is decided (its reply not yet sent)."""

    def __init__(self, service: PlacementService, *,
                 on_configured: Callable[[RuntimeInfo], None] | None = None,
                 on_synchronized: Callable[[], None] | None = None,
                 kernel_view: KernelView | None = None,
                 locate_devices: LocateDevices | None = None) -> None:
        self._service = service
        self._kernel_view = kernel_view
        self._locate = locate_devices
        self._on_configured = on_configured
        self._on_synchronized = on_synchronized
        self.runtime: RuntimeInfo | None = None

    def subscribed_events(self) -> frozenset[Event]:
        """:func:`events_for` this runtime."""
        return events_for(self.runtime)

    def on_configure(self, info: RuntimeInfo) -> None:
        self.runtime = info  # the session logged the Configure
        if self._on_configured is not None:
            self._on_configured(info)

    def on_synchronize(self, pods: Sequence[pb.PodSandbox],
                       containers: Sequence[pb.Container]) -> Sequence[pb.ContainerUpdate]:
        unstarted = {c.id for c in containers if c.state == pb.CONTAINER_CREATED}
        facts = [translate.container_facts(c, started=c.id not in unstarted,
                                           locate=self._locate) for c in containers]
        lagging: set[str] = set()
        if self._kernel_view is not None:
            facts, lagging = _as_the_kernel_has_them(facts, self._kernel_view)
        synchronized = self._service.synchronize(
            [translate.pod_facts(p) for p in pods], facts, source="synchronize",
            unstarted=unstarted)
        self._service.pusher.record_lags(lagging - {u.container_id for u in synchronized.updates})
        # The ones that run have their cgroups (a stopped one's is gone, or going: a file kept
        # would pin it).
        self._ready([c.id for c in containers if c.state == pb.CONTAINER_RUNNING])
        if self._on_synchronized is not None:
            self._on_synchronized()
        return translate.updates(synchronized.updates)

    def on_create_container(self, pod: pb.PodSandbox, container: pb.Container,
                            ) -> tuple[pb.ContainerAdjustment | None, Sequence[pb.ContainerUpdate]]:
        try:
            admission = self._service.admit(
                translate.pod_facts(pod), translate.container_facts(container, locate=self._locate))
        except AdmissionError as error:
            raise HandlerError(f"nri-cpuset: {error}") from error
        return (translate.adjustment(admission.placement), translate.updates(admission.updates))

    def on_update_container(self, pod: pb.PodSandbox, container: pb.Container,
                            resources: pb.LinuxResources) -> Sequence[pb.ContainerUpdate]:
        """An in-place resize: the container's own update goes last (the runtime applies the
        others first, then this one in place of the kubelet's values)."""
        facts = translate.resized(translate.container_facts(container, locate=self._locate),
                                  resources)
        try:
            resized = self._service.resize(translate.pod_facts(pod), facts)
        except AdmissionError as error:
            raise HandlerError(f"nri-cpuset: {error}") from error
        if resized is None:
            return []
        own = translate.container_update(container.id, resized.placement.cpus,
                                         resized.placement.mems)
        return [*translate.updates(resized.updates), own]

    def on_start_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        """It starts: it no longer waits for its start, or, if its CPUs were given back for
        not starting in time, its start is refused (``StartCases.started``)."""
        try:
            self._service.starts.started(container.id, _subject(pod, container))
        except AdmissionError as error:
            raise HandlerError(f"nri-cpuset: {error}") from error
        self._service.quota.lift(container.id, container.linux.cgroups_path)
        self._ready([container.id])  # its cgroup exists now
        if _sees_starts_end(self.runtime):  # records wait until its PostStartContainer
            self._service.pusher.pace.starting(container.id)

    def _ready(self, container_ids: Sequence[str]) -> None:
        """Ready for their first kernel write the containers whose cpusets follow the shared
        pool (every integer or pinned creation writes them; decision 63). Not an exclusive
        one: written only if a pin moves it, while readying it on cgroup v1 is a domain
        rebuild beside its own start, the start an integer creation is timed by."""
        entries = self._service.ledger.entries
        self._service.pusher.kernel.ready(
            cid for cid in container_ids
            if (entry := entries.get(cid)) is not None and entry.on_shared_pool)

    def on_post_start_container(self, pod: pb.PodSandbox,  # noqa: ARG002 (the port's shape)
                                container: pb.Container) -> None:
        """Its task started: the runtime's records need not wait for this start any more."""
        self._service.pusher.pace.started(container.id)

    def on_post_update_container(self, pod: pb.PodSandbox,  # noqa: ARG002 (the port's shape)
                                 container: pb.Container) -> None:
        """The runtime wrote the record's quota with the kubelet's update: lifted again."""
        self._service.quota.lift(container.id, container.linux.cgroups_path)

    def on_stop_container(self, pod: pb.PodSandbox,
                          container: pb.Container) -> Sequence[pb.ContainerUpdate]:
        return translate.updates(self._service.stop(container.id, _subject(pod, container)))

    def on_remove_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        self._service.remove(container.id, _subject(pod, container))

    def on_pod_sandbox_gone(self, pod: pb.PodSandbox, *, removed: bool) -> None:
        self._service.release_pod(pod.id, f"{pod.namespace}/{pod.name}", removed=removed)

    def on_disconnect(self) -> None:
        self._service.disconnected()
        _log.warning("runtime connection lost; state is rebuilt at the next Synchronize")


def _as_the_kernel_has_them(facts: list[ContainerFacts], view: KernelView,
                            ) -> tuple[list[ContainerFacts], set[str]]:
    """``facts`` with each readable cgroup's cpus and mems in place of the runtime's record,
    and the ids whose record differed. A record without cpus is left alone: no cpuset was ever
    set on that container (created while the plugin was away), so its cgroup shows only what
    it inherited, and the rebuild must see it as unset."""
    seen = view({f.id: f.cgroups_path for f in facts if f.cgroups_path})
    lagging: set[str] = set()
    kernel_facts = []
    for fact in facts:
        observed = seen.get(fact.id)
        if observed is None or not observed.cpus or not fact.cpus:
            kernel_facts.append(fact)
            continue
        # Memory nodes the runtime left unset stay unset (the kernel shows them all).
        mems = str(observed.mems) if fact.mems and observed.mems else fact.mems
        if ((observed.cpus, parse_reported(mems))
                != (parse_reported(fact.cpus), parse_reported(fact.mems))):
            lagging.add(fact.id)
            kernel_facts.append(replace(fact, cpus=str(observed.cpus), mems=mems))
        else:
            kernel_facts.append(fact)
    return kernel_facts, lagging


def _subject(pod: pb.PodSandbox, container: pb.Container) -> str:
    return f"{pod.namespace}/{pod.name}/{container.name}"
