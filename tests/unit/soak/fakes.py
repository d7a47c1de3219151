"""Fakes of the parts an operation touches (``cpuset_soak.parts``), so that one operation, or a
history's operations, runs without a runtime, a plugin or a kernel: a runtime that admits
every container unless told what to refuse, a plugin that always answers, and checks that read
nothing. The record is the soak's own (``cpuset_soak.record.Record``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import ContainerInfo, Resources
from cpuset_adapters.grpc_status import StatusCode
from cpuset_lab import faulty_runc
from cpuset_soak.dispatch import Parts
from cpuset_soak.hotplug import Offlining
from cpuset_soak.model import Node, Pod
from cpuset_soak.parts import Model, Pace, Started
from cpuset_soak.record import Record


class FakeRuntime:
    """containerd and runc: which containers' updates runc refuses; restarts counted."""

    def __init__(self) -> None:
        self.refusing: set[str] = set()
        self.restarts = 0

    def restart(self) -> None:
        self.restarts += 1

    def refuse_updates(self, container_id: str) -> None:
        self.refusing.add(container_id)

    def allow_updates(self, container_id: str) -> None:
        self.refusing.discard(container_id)


MISSING = ("failed to create containerd task: failed to create shim task: OCI runtime create "
           "failed: runc create failed: unable to start container process: exec: "
           "\"/nonexistent\": stat /nonexistent: no such file or directory: unknown")
"""containerd's error for a start whose command does not exist."""


class FakeKubelet:
    """CRI on a runtime that creates what it is asked, but the containers named in ``refuse``
    (``pod/name`` → the runtime's error text), and whose runc refuses the updates
    ``runtime`` says. A container whose command is ``/nonexistent`` fails to start (exited,
    as containerd leaves it); one whose id is in ``refuse_start`` fails to start with that
    text. Every call is in ``calls``."""

    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime
        self.refuse: dict[str, str] = {}
        self.refuse_start: dict[str, str] = {}
        self.calls: list[tuple[str, ...]] = []
        self.containers: dict[str, ContainerInfo] = {}
        self.missing: set[str] = set()
        self.now = 1_000_000_000_000  # the runtime's clock, ns

    def run_pod(self, pod: Pod) -> None:
        pod.uid, pod.pod_id = f"uid-{pod.name}", f"sandbox-{pod.name}"
        self.calls.append(("run_pod", pod.name))

    def create(self, pod_id: str, name: str, resources: Resources,
               command: list[str] | None = None, *, attempt: int = 0) -> str:
        pod = pod_id.removeprefix("sandbox-")
        self.calls.append(("create", f"{pod}/{name}" + (f"#{attempt}" if attempt else "")))
        if f"{pod}/{name}" in self.refuse:
            raise CriError("CreateContainer", StatusCode.UNKNOWN, self.refuse[f"{pod}/{name}"])
        cid = f"{pod}-{name}" + (f"-{attempt}" if attempt else "")
        self.now += 1
        self.containers[cid] = ContainerInfo(id=cid, pod_id=pod_id, name=name,
                                             state="CONTAINER_CREATED", annotations={},
                                             labels={}, created_at=self.now)
        if command == ["/nonexistent"]:
            self.missing.add(cid)
        return cid

    def start(self, container_id: str) -> Started:
        self.calls.append(("start", container_id))
        if container_id in self.refuse_start:
            raise CriError("StartContainer", StatusCode.UNKNOWN,
                           self.refuse_start[container_id])
        if container_id in self.missing:
            self._state(container_id, "CONTAINER_EXITED")
            raise CriError("StartContainer", StatusCode.UNKNOWN, MISSING)
        self._state(container_id, "CONTAINER_RUNNING")
        return Started(pid=0, cgroups_path="")  # no cgroup: the kernel is never read

    def state(self, container_id: str) -> str:
        return self.containers[container_id].state

    def list_containers(self, pod_id: str | None = None, *,
                        state: str | None = None) -> list[ContainerInfo]:
        return [c for c in self.containers.values()
                if pod_id in (None, c.pod_id) and state in (None, c.state)]

    def stop(self, container_id: str) -> None:
        self.calls.append(("stop", container_id))
        self._state(container_id, "CONTAINER_EXITED")

    def remove(self, container_id: str) -> None:
        self.calls.append(("remove", container_id))
        del self.containers[container_id]

    def delete_pod(self, pod_id: str) -> None:
        self.calls.append(("delete_pod", pod_id.removeprefix("sandbox-")))
        self.containers = {k: c for k, c in self.containers.items() if c.pod_id != pod_id}

    def update_resources(self, container_id: str, resources: Resources | None = None, *,
                         cpuset_cpus: str = "") -> None:
        self.calls.append(("update", container_id))
        if container_id in self.runtime.refusing:
            raise CriError("UpdateContainerResources", StatusCode.UNKNOWN,
                           f"{faulty_runc.REFUSAL} {container_id} (fault injected)")

    def _state(self, container_id: str, state: str) -> None:
        self.containers[container_id] = dataclasses.replace(self.containers[container_id],
                                                            state=state)


class FakePlugin:
    """A plugin that answers (``up``) until it is killed or paused, and refused the
    containers in ``rejected``; its state document is ``document``."""

    def __init__(self) -> None:
        self.up = True
        self.rejected: set[str] = set()
        self.document: dict[str, Any] = {}
        self.synchronized = 1
        self.namespaces: tuple[str, ...] = ("*",)
        self.applied = 0

    @property
    def status_socket(self) -> Path:
        return Path("/nonexistent/status.sock")

    def refused(self, container_id: str) -> bool:
        return container_id in self.rejected

    def kill(self) -> None:
        self.up = False

    def restart(self) -> None:
        self.synchronized += 1
        self.up = True

    def pause(self) -> None:
        self.up = False

    def resume(self) -> None:
        self.synchronized += 1  # it reconnects at once

    def synchronizations(self) -> int:
        return self.synchronized

    def reload(self, namespaces: tuple[str, ...]) -> None:
        self.namespaces = namespaces
        self.applied += 1

    def reloads(self) -> int:
        return self.applied

    def state(self) -> dict[str, Any]:
        return self.document


class NoKernel:
    """Checks that read nothing (no container of the fakes has a cgroup); counted."""

    def __init__(self) -> None:
        self.checked = 0

    def refresh_integers(self) -> None:
        pass

    def check_always(self) -> None:
        self.checked += 1


class AtOnce:
    """Background work run at once, before the operation returns."""

    def start(self, work: Callable[[], None]) -> None:
        work()


@dataclasses.dataclass
class Fakes:
    """A node of fakes and the parts an operation is handed from it."""

    node: Node
    model: Model = dataclasses.field(init=False)
    record: Record = dataclasses.field(default_factory=Record)
    runtime: FakeRuntime = dataclasses.field(default_factory=FakeRuntime)
    kubelet: FakeKubelet = dataclasses.field(init=False)
    plugin: FakePlugin = dataclasses.field(default_factory=FakePlugin)
    checks: NoKernel = dataclasses.field(default_factory=NoKernel)

    def __post_init__(self) -> None:
        self.model = Model(self.node)
        self.kubelet = FakeKubelet(self.runtime)

    def parts(self) -> Parts:
        return Parts(kubelet=self.kubelet, model=self.model, record=self.record,
                     checks=self.checks, plugin=self.plugin, runtime=self.runtime,
                     pace=Pace(), background=AtOnce(), cpus=Offlining())


class FakeClock:
    """A clock for ``Node.clock`` that moves only when told (``advance``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
