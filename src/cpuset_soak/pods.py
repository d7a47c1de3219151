"""The pod operations, carried out over CRI as a kubelet would: a pod created (with an init
container or a sidecar now and then) and each container's outcome judged against the model,
a pod deleted, a container stopped without being removed. The model follows what the runtime
answered."""

from __future__ import annotations

import contextlib
import time
from typing import Final

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import Resources
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_lab.resources import container_resources, guaranteed

from . import requests
from .history import Op
from .lifetimes import given, judged
from .model import (
    BEST_EFFORT,
    CREATED,
    HOLDING,
    INTEGER,
    MIXED,
    PINNED,
    RUNNING,
    SHARED,
    Container,
    Node,
    Pod,
)
from .outcomes import refused, refused_yet_exists
from .parts import Checks, Kubelet, Model, Pace, Plugin, PluginView, Recorder, Runtime
from .prediction import ADMIT, Prediction

QOS: Final = {INTEGER: "Guaranteed", SHARED: "Burstable", BEST_EFFORT: "BestEffort",
              PINNED: "Burstable"}


def resources(kind: str, cpus: int) -> Resources:
    """What the kubelet gives a container of ``kind`` (or of a request's shape)."""
    if kind in requests.SHAPES:
        return requests.resources(kind, cpus)
    if kind == INTEGER:
        return guaranteed(cpus, "64Mi")
    if kind == BEST_EFFORT:
        return container_resources()
    return container_resources(cpu_request="100m")


def run_pod(op: Op, *, kubelet: Kubelet, model: Model) -> Pod:
    """The operation's pod, its sandbox run and the model told."""
    shape = op["type"]
    qos = QOS[shape] if shape in QOS else requests.qos(shape, int(op.get("cpus", 0)))
    pod = Pod(name=op["pod"], namespace=op["namespace"], qos=qos, annotation=op.get("pins"),
              requests=dict(op.get("annotations", {})), handler=op.get("handler", ""))
    kubelet.run_pod(pod)
    with model.lock:
        model.node.pods[pod.name] = pod
    return pod


def create(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder, checks: Checks,
           plugin: Plugin, pace: Pace) -> None:
    kind = op["type"]
    pod = run_pod(op, kubelet=kubelet, model=model)
    own = PINNED if pod.annotation is not None else kind
    cpus = int(op.get("cpus", 1))

    def start(name: str, count: int, command: list[str] | None = None) -> Container | None:
        return start_container(pod, name, own, cpus=count, command=command, kubelet=kubelet,
                               model=model, record=record, checks=checks, plugin=plugin)

    if op.get("init"):
        init = start("init", 1, ["/bin/true"])
        if init is None:
            return
        wait_exited(init, kubelet=kubelet, model=model, record=record, pace=pace)
    elif op.get("sidecar") and start("sidecar", 1) is None:
        return
    start("app", cpus)


def predict(node: Node, pod: Pod, kind: str, cpus: int) -> Prediction:
    if kind in requests.SHAPES:
        return requests.predict(node, pod, kind, cpus)
    if kind == PINNED:
        held = pod.pin is not None and any(c.state in HOLDING
                                           for c in pod.containers.values())
        return ADMIT if held else node.predict_pinned(pod)
    if kind == INTEGER:
        return node.predict_integer(cpus)
    return node.predict_shared()


def start_container(pod: Pod, name: str, kind: str, *, cpus: int,
                    command: list[str] | None = None, kubelet: Kubelet, model: Model,
                    record: Recorder, checks: Checks, plugin: Plugin) -> Container | None:
    """Create and start one container; its outcome judged; the model updated."""
    container = create_container(pod, name, kind, cpus=cpus, command=command,
                                 kubelet=kubelet, model=model, record=record, checks=checks,
                                 plugin=plugin)
    if container is None:
        return None
    started = kubelet.start(container.cid)
    with model.lock:
        container.state = RUNNING
        container.pid, container.cgroups_path = started.pid, started.cgroups_path
    checks.check_always()
    return container


def create_container(pod: Pod, name: str, kind: str, *, cpus: int,
                     command: list[str] | None = None, attempt: int = 0, kubelet: Kubelet,
                     model: Model, record: Recorder, checks: Checks, plugin: Plugin,
                     kept: frozenset[str] = frozenset()) -> Container | None:
    """Create one container (not started: ``created`` in the model, holding what it was
    given), its creation judged against the model; None when it was refused. ``kept``: the
    pod's dead instances of the same name (beside which a kubelet creates the next attempt)."""
    checks.refresh_integers()
    with model.lock:
        prediction = judged(model.node, lambda: predict(model.node, pod, kind, cpus))
    managed = plugin.up
    subject = (f"{pod.name}/{name}{f' attempt {attempt}' if attempt else ''} "
               f"({kind}{f' x{cpus}' if kind == INTEGER or kind in requests.SHAPES else ''})")
    try:
        cid = kubelet.create(pod.pod_id, name, resources(kind, cpus), command, attempt=attempt)
    except CriError as err:
        refused(pod, name, subject, prediction, details=err.details, managed=managed,
                kubelet=kubelet, plugin=plugin, record=record, kept=kept)
        return None
    with model.lock:
        own = requests.kind_of(model.node, kind, cpus) if kind in requests.SHAPES else kind
        container = Container(pod=pod.name, name=name, kind=own,
                              cpus=requests.exclusive(own, cpus), cid=cid, state=CREATED,
                              mixed=own == MIXED, unmanaged=not managed,
                              created_at=model.node.clock())
    record.outcome(f"admitted {subject} as {cid[:12]}")
    if managed:
        record.admitted(container.kind if kind != requests.QUIET_REQUEST
                        else f"{container.kind} asking quiet CPUs")
        refused_yet_exists(subject, cid, plugin=plugin, record=record)
    with model.lock:
        pod.containers[name] = container
        # A pin admitted against the rules (a violation below) pins nothing in the model.
        if kind == PINNED and pod.pin is None and managed and prediction.may_admit:
            pod.pin = CPUSet.parse(pod.annotation or "")
    if managed and not prediction.may_admit:
        record.violation(f"{subject} was admitted, but it does not fit: the model allows "
                         f"only refusals ({', '.join(sorted(prediction.reasons))})")
    return container


def note_given(container: Container, plugin: PluginView) -> None:
    """Remember what the plugin's state document says ``container`` was given (it has no
    cgroup to read before it starts); nothing when the plugin does not answer."""
    if not plugin.up:
        return
    with contextlib.suppress(OSError):
        container.actual = given(plugin.state(), container.cid) or EMPTY


def wait_exited(container: Container, *, kubelet: Kubelet, model: Model, record: Recorder,
                pace: Pace) -> None:
    deadline = time.monotonic() + pace.seconds(30)
    while kubelet.state(container.cid) != "CONTAINER_EXITED":
        if time.monotonic() > deadline:
            record.violation(f"init container {container.pod}/{container.name} never exited")
            return
        time.sleep(0.05)
    with model.lock:
        model.node.release(container, "exited")


def delete(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder,
           runtime: Runtime) -> None:
    pod = model.node.pods.get(op["pod"])
    if pod is None:
        return
    kubelet.delete_pod(pod.pod_id)
    with model.lock:
        for container in pod.containers.values():
            model.node.release(container, "removed")
            runtime.allow_updates(container.cid)
        del model.node.pods[pod.name]
    record.outcome(f"deleted {pod.name}")


def target(op: Op, node: Node) -> Container | None:
    """The running container ``op`` names (``pod``, ``container``), if there is one."""
    pod = node.pods.get(op["pod"])
    container = pod.containers.get(op["container"]) if pod is not None else None
    return container if container is not None and container.state == RUNNING else None


def stop(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder) -> None:
    container = target(op, model.node)
    if container is None:
        return
    kubelet.stop(container.cid)
    with model.lock:
        model.node.release(container, "stopped")
    record.outcome(f"stopped {op['pod']}/{op['container']}")


def run_shared(pod: Pod, kubelet: Kubelet) -> Container | str:
    """Run ``pod`` with one shared container, ``app`` (pinned with an annotation): the
    container, or the runtime's error text when it was refused. CRI calls only, so that it may
    run in a worker; the caller updates the model."""
    kubelet.run_pod(pod)
    try:
        cid = kubelet.create(pod.pod_id, "app", resources(SHARED, 0))
    except CriError as err:
        return err.details
    started = kubelet.start(cid)
    kind = PINNED if pod.annotation is not None else SHARED
    return Container(pod=pod.name, name="app", kind=kind, cid=cid, pid=started.pid,
                     cgroups_path=started.cgroups_path)
