"""A pod run the way the kubelet's pod worker runs it, where that matters to placement.

Facts about the real kubelet (v1.36, with containerd 1.7 and 2.x; shared/notes/real-containerd.md):

* a container that does not run (its start failed, it exited, its creation was refused) gets a
  next attempt after a back-off of 10 s doubling to 5 min, created *beside* its last dead
  instance: garbage collection keeps the most recent dead instance of each container (for
  ``kubectl logs --previous``), never more;
* each instance carries its attempt number (``ContainerMetadata.attempt``, the restart count);
* a sandbox that is gone or no longer ready (its pause process killed) is replaced by a new one
  with the next sandbox attempt, and every container is created again in it;
* annotations reach the runtime only in RunPodSandbox: CreateContainer carries the pod's
  current sandbox config, but containerd (and so NRI) keeps the one the sandbox was run with,
  so an annotation changed on a running pod changes nothing until the pod is recreated.

:class:`PodWorker` does those things over CRI, one :meth:`PodWorker.sync` at a time (the
kubelet's SyncPod), with the back-off on a clock it is given, so tests may scale time.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import ContainerInfo, Resources
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec


@dataclass(frozen=True, slots=True)
class Backoff:
    """The kubelet's crash-loop back-off: ``initial`` seconds, doubling up to ``cap``."""

    initial: float = 10.0
    cap: float = 300.0

    def after(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failure in a row."""
        return min(self.initial * 2.0 ** max(failures - 1, 0), self.cap)


KUBELET_BACKOFF = Backoff()


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerSpec:
    """One container of the pod: its resources and command (``None``: the image's)."""

    name: str
    resources: Resources
    command: Sequence[str] | None = None
    start: bool = True
    """``False``: created and never started (the kubelet deleted the pod between the two
    calls, or gave up on a start that timed out)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One instance the worker tried: ``error`` is ``""`` when it started, else the runtime's
    words, and ``failed_at`` says which call failed (``"create"`` or ``"start"``)."""

    container: str
    attempt: int
    container_id: str
    at: float
    error: str = ""
    failed_at: str = ""


@dataclass
class _Restarts:
    count: int = 0
    failures: int = 0
    next_try: float = 0.0
    crashed: str = ""
    """The last instance that started and was then found dead (counted once)."""

    def failed(self, now: float, backoff: Backoff) -> None:
        self.failures += 1
        self.next_try = now + backoff.after(self.failures)


@dataclass
class PodWorker:
    """``spec``'s pod (its ``uid`` fixed) with ``containers``, run on ``cri`` from ``image``."""

    cri: KubeletClient
    spec: PodSpec
    containers: Sequence[ContainerSpec]
    image: str
    backoff: Backoff = KUBELET_BACKOFF
    clock: Callable[[], float] = time.monotonic
    sandbox_id: str = ""
    sandboxes: list[str] = field(default_factory=list)
    """Every sandbox this worker ran, the current one last."""
    attempts: list[Attempt] = field(default_factory=list)
    _restarts: dict[str, _Restarts] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.spec.uid is None:
            self.spec = replace(self.spec, uid=str(uuid.uuid4()))

    def annotate(self, annotations: Mapping[str, str]) -> None:
        """``kubectl annotate``: the pod object changes; the runtime sees it only in the next
        sandbox's RunPodSandbox."""
        self.spec = replace(self.spec, annotations={**(self.spec.annotations or {}),
                                                    **annotations})

    def sync(self) -> None:
        """One SyncPod: a new sandbox if there is none or it is not ready, then every container
        that does not run and whose back-off has passed gets its next attempt."""
        if not self.sandbox_id or not self._sandbox_ready():
            self._new_sandbox()
        for container in self.containers:
            self._sync_container(container)

    def of(self, name: str) -> list[Attempt]:
        """The attempts at container ``name``, oldest first."""
        return [a for a in self.attempts if a.container == name]

    def close(self) -> None:
        """Stop and remove every sandbox this worker ran (and so their containers)."""
        for sandbox in self.sandboxes:
            self.cri.stop_pod(sandbox)
            self.cri.remove_pod(sandbox)
        self.sandboxes.clear()
        self.sandbox_id = ""

    # -- what SyncPod does --

    def _sandbox_ready(self) -> bool:
        return any(p.id == self.sandbox_id and p.ready for p in self.cri.list_pods())

    def _new_sandbox(self) -> None:
        if self.sandbox_id:  # killed: what is left of it stops; it is collected later
            self.cri.stop_pod(self.sandbox_id)
            attempt = self.spec.attempt + 1
            self.spec = replace(self.spec, attempt=attempt)
            self._restarts = {name: replace(r, next_try=0.0)
                              for name, r in self._restarts.items()}
        self.sandbox_id = self.cri.run_pod(self.spec)
        self.sandboxes.append(self.sandbox_id)

    def _sync_container(self, container: ContainerSpec) -> None:
        instances = sorted((c for c in self.cri.list_containers(self.sandbox_id)
                            if c.name == container.name), key=lambda c: c.created_at)
        if any(c.state in ("CONTAINER_RUNNING", "CONTAINER_CREATED") for c in instances):
            return
        restarts = self._restarts.setdefault(container.name, _Restarts())
        last = self.of(container.name)[-1:]
        if (instances and last and not last[0].error
                and restarts.crashed != last[0].container_id):
            restarts.crashed = last[0].container_id  # it ran, and exited: a crash loop
            restarts.failed(self.clock(), self.backoff)
        if instances and self.clock() < restarts.next_try:
            return
        self._collect(instances)
        attempt = self._attempt(container, restarts.count)
        restarts.count += 1
        if attempt.error:
            restarts.failed(self.clock(), self.backoff)
        self.attempts.append(attempt)

    def _collect(self, dead: list[ContainerInfo]) -> None:
        """Garbage collection: only the most recent dead instance stays beside the next."""
        for old in dead[:-1]:
            self.cri.remove(old.id)

    def _attempt(self, container: ContainerSpec, attempt: int) -> Attempt:
        now = self.clock()
        try:
            # The pod's current sandbox config, as a kubelet sends it; the runtime keeps the
            # one its sandbox was run with.
            cid = self.cri.create_container(
                self.sandbox_id, self.spec.sandbox_config(), container.name, self.image,
                resources=container.resources, command=container.command, attempt=attempt)
        except CriError as exc:
            return Attempt(container.name, attempt, "", now, exc.details, "create")
        if not container.start:
            return Attempt(container.name, attempt, cid, now)
        try:
            self.cri.start(cid)
        except CriError as exc:
            return Attempt(container.name, attempt, cid, now, exc.details, "start")
        return Attempt(container.name, attempt, cid, now)
