"""Carrying out the pod operations on the lab's containerd over CRI, as a kubelet would, and
judging each creation's and resize's outcome against the model: a refusal must carry the
plugin's typed error, be one the model allows, and leave no container behind; a container
created must not be one the plugin refused; what fits must not be refused."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Final

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import Resources
from cpuset_core.cpuset import CPUSet
from cpuset_lab import faulty_runc
from cpuset_lab.pod_spec import PodSpec, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed

from . import kernel
from .history import Op
from .model import (
    ADMIT,
    BEST_EFFORT,
    INTEGER,
    PINNED,
    SHARED,
    Container,
    Pod,
    Prediction,
)
from .reclass import changed, class_change

if TYPE_CHECKING:
    from .runner import Soak


KEY: Final = "weka.io/cores-ids"
QOS: Final = {INTEGER: "Guaranteed", SHARED: "Burstable", BEST_EFFORT: "BestEffort",
              PINNED: "Burstable"}
PHRASES: Final = {
    "invalid-annotation": " is invalid: ",
    "pin-namespace-not-allowed": " may not use the annotation ",
    "cpu-unavailable": " that are not online ",
    "insufficient-cpus": " exclusive CPU(s) but only ",
    "insufficient-cpus-for-reassignment": "; moving them needs ",
    "shared-pool-exhausted": "shared CPU pool would be empty",
    "shared-pool-below-minimum": "below the configured minimum",
}
"""Each typed refusal's wording in the runtime's error text (``cpuset_core.errors``)."""


def reason_of(details: str) -> str | None:
    """The typed refusal the runtime's error text carries (None: not the plugin's)."""
    if "nri-cpuset: " not in details:
        return None
    found = [reason for reason, phrase in PHRASES.items() if phrase in details]
    return found[0] if len(found) == 1 else None


def resources(kind: str, cpus: int) -> Resources:
    if kind == INTEGER:
        return guaranteed(cpus, "64Mi")
    if kind == BEST_EFFORT:
        return container_resources()
    return container_resources(cpu_request="100m")


def create(soak: Soak, op: Op) -> None:
    kind = op["type"]
    pod = Pod(name=op["pod"], namespace=op["namespace"], qos=QOS[kind],
              annotation=op.get("pins"), handler=op.get("handler", ""))
    pod.uid = str(uuid.uuid4())  # per run: a rerun of a seed never meets an earlier run's cgroups
    annotations = {KEY: pod.annotation} if pod.annotation is not None else {}
    pod.pod_id = soak.cri.run_pod(PodSpec(
        name=pod.name, namespace=pod.namespace, uid=pod.uid, annotations=annotations,
        cgroup_parent=cgroup_parent(pod.qos, pod.uid)), runtime_handler=pod.handler)
    soak.uids.add(pod.uid)
    with soak.lock:
        soak.model.pods[pod.name] = pod
    own = PINNED if pod.annotation is not None else kind
    cpus = int(op.get("cpus", 1))
    if op.get("init"):
        init = start_container(soak, pod, "init", own, cpus=1, command=["/bin/true"])
        if init is None:
            return
        wait_exited(soak, init)
    elif op.get("sidecar") and start_container(soak, pod, "sidecar", own, cpus=1) is None:
        return
    start_container(soak, pod, "app", own, cpus=cpus)


def predict(soak: Soak, pod: Pod, kind: str, cpus: int) -> Prediction:
    model = soak.model
    if kind == PINNED:
        held = pod.pin is not None and any(c.state == "running"
                                           for c in pod.containers.values())
        return ADMIT if held else model.predict_pinned(pod)
    if kind == INTEGER:
        return model.predict_integer(cpus)
    return model.predict_shared()


def start_container(soak: Soak, pod: Pod, name: str, kind: str, *, cpus: int,
                    command: list[str] | None = None) -> Container | None:
    """Create and start one container; its outcome judged; the model updated."""
    soak.refresh_integers()
    prediction = predict(soak, pod, kind, cpus if kind == INTEGER else 0)
    managed = soak.plugin_answers()
    subject = f"{pod.name}/{name} ({kind}{f' x{cpus}' if kind == INTEGER else ''})"
    try:
        cid = soak.cri.create_container(pod.pod_id, None, name, soak.image,
                                        resources=resources(kind, cpus), command=command)
    except CriError as err:
        refused(soak, pod, name, subject, prediction, details=err.details, managed=managed)
        return None
    soak.cids.add(cid)
    soak.cri.start(cid)
    status = soak.cri.container_status(cid)
    container = Container(pod=pod.name, name=name, kind=kind,
                          cpus=cpus if kind == INTEGER else 0, cid=cid, pid=status.pid or 0,
                          cgroups_path=status.cgroups_path or "", unmanaged=not managed)
    soak.outcome(f"admitted {subject} as {cid[:12]}")
    if managed:
        refused_yet_exists(soak, subject, cid)
    with soak.lock:
        pod.containers[name] = container
        # A pin admitted against the rules (a violation below) pins nothing in the model.
        if kind == PINNED and pod.pin is None and managed and prediction.may_admit:
            pod.pin = CPUSet.parse(pod.annotation or "")
    if managed and not prediction.may_admit:
        soak.violation(f"{subject} was admitted, but it does not fit: the model allows only "
                       f"refusals ({', '.join(sorted(prediction.reasons))})")
    soak.check_always()
    return container


def refused(soak: Soak, pod: Pod, name: str, subject: str, prediction: Prediction, *,
            details: str, managed: bool) -> None:
    reason = reason_of(details)
    allowed = ("must admit" if prediction.must_admit
               else f"{'may admit or ' if prediction.may_admit else 'must '}refuse "
                    f"{sorted(prediction.reasons)}")
    soak.outcome(f"refused {subject}: {reason or 'not by the plugin'} (model: {allowed}): "
                 f"{details[-160:]}")
    if reason is not None:
        soak.tally.refusals[reason] += 1
    if managed and soak.plugin_answers():
        if reason is None:
            soak.violation(f"{subject} failed without a typed refusal of the plugin: {details}")
        elif not prediction.allows(reason):
            expected = ("admission" if prediction.must_admit
                        else f"one of {sorted(prediction.reasons)}")
            soak.violation(f"{subject} refused with {reason}, the model expects {expected}: "
                           f"{details}")
    left = [c for c in soak.cri.list_containers(pod.pod_id) if c.name == name]
    if left and reason is not None:
        soak.violation(f"{subject} was refused ({reason}) but exists: {left}")


def refused_yet_exists(soak: Soak, subject: str, cid: str) -> None:
    """The runtime created the container: the plugin must not have refused it (its log's
    ``reject`` events name what it refused, whatever it answered)."""
    if soak.node.rejections.refused(cid):
        soak.violation(f"{subject} exists as {cid[:12]}, but the plugin refused it (a "
                       f"'reject' for {cid[:12]} in its log)")


def wait_exited(soak: Soak, container: Container) -> None:
    deadline = time.monotonic() + 30 * soak.node.scale
    while soak.cri.container_status(container.cid).state != "CONTAINER_EXITED":
        if time.monotonic() > deadline:
            soak.violation(f"init container {container.pod}/{container.name} never exited")
            return
        time.sleep(0.05)
    with soak.lock:
        soak.model.release(container, "exited")


def delete(soak: Soak, op: Op) -> None:
    pod = soak.model.pods.get(op["pod"])
    if pod is None:
        return
    soak.cri.stop_pod(pod.pod_id)
    soak.cri.remove_pod(pod.pod_id)
    with soak.lock:
        for container in pod.containers.values():
            soak.model.release(container, "removed")
            soak.node.lab.update_faults.allow(container.cid)
        del soak.model.pods[pod.name]
    soak.outcome(f"deleted {pod.name}")


def target(soak: Soak, op: Op) -> Container | None:
    pod = soak.model.pods.get(op["pod"])
    container = pod.containers.get(op["container"]) if pod is not None else None
    return container if container is not None and container.state == "running" else None


def stop(soak: Soak, op: Op) -> None:
    container = target(soak, op)
    if container is None:
        return
    soak.cri.stop(container.cid)
    with soak.lock:
        soak.model.release(container, "stopped")
    soak.outcome(f"stopped {op['pod']}/{op['container']}")


def resize(soak: Soak, op: Op) -> None:
    """An in-place resize of an integer container (CRI UpdateContainerResources)."""
    container = target(soak, op)
    if container is None or container.kind != INTEGER:
        return
    before, after = container.cpus, int(op["cpus"])
    soak.refresh_integers()
    prediction = soak.model.predict_integer(after - before) if after > before else ADMIT
    subject = f"{op['pod']}/{op['container']} resize {before} -> {after}"
    try:
        soak.cri.update_resources(container.cid, guaranteed(after, "64Mi"))
    except CriError as err:
        if faulty_runc.REFUSAL in err.details:  # decided, but runc refused to apply it
            soak.outcome(f"{subject}: runc refused it")
            with soak.lock:
                container.cpus = after
                soak.model.uncertain += max(0, before - after)
            return
        refused(soak, soak.model.pods[op["pod"]], "", subject, prediction,
                details=err.details, managed=soak.plugin_answers())
        return
    with soak.lock:
        container.cpus = after
        soak.model.uncertain += max(0, before - after)
    soak.outcome(f"{subject}: done")
    if not prediction.may_admit and soak.plugin_answers():
        soak.violation(f"{subject} was done, but it does not fit "
                       f"({', '.join(sorted(prediction.reasons))})")
    soak.check_always()


def cri_cpuset(soak: Soak, op: Op) -> None:
    """A CRI UpdateContainerResources --cpuset-cpus on a shared container: the plugin (or
    its verifier) puts it back on the pool. A container a Synchronize ran shared although it
    asks for more (a Guaranteed one when the pool would have been empty, a pin from a
    namespace then not allowed) changes class at any update: the plugin places it afresh as
    a creation would be, or refuses the update (``CpusetEngine.plan_resize``)."""
    container = target(soak, op)
    if container is None:
        return
    container.tampered = True
    subject = f"CRI cpuset {op['cpus']} on {op['pod']}/{op['container']}"
    pod = soak.model.pods[op["pod"]]
    change = class_change(soak, pod, container) if soak.plugin_answers() else None
    try:
        soak.cri.update_resources(container.cid, cpuset_cpus=op["cpus"])
    except CriError as err:
        if change is not None and faulty_runc.REFUSAL in err.details:  # decided, not applied
            changed(soak, pod, container, change[0])
            soak.outcome(f"{subject}: placed as {change[0]}, runc refused it")
        elif change is not None:
            refused(soak, pod, "", subject, change[1], details=err.details, managed=True)
        else:
            soak.outcome(f"{subject} failed: {err.details[-120:]}")
        return
    if change is None:
        soak.outcome(subject)
        return
    kind, prediction = change
    changed(soak, pod, container, kind)
    soak.outcome(f"{subject}: placed as {kind}")
    if not prediction.may_admit and soak.plugin_answers():
        soak.violation(f"{subject} placed it as {kind}, but that is not allowed "
                       f"({', '.join(sorted(prediction.reasons))})")
    soak.check_always()


def oob_write(soak: Soak, op: Op) -> None:
    """Someone with access to cgroupfs writes the container's cpuset.cpus."""
    container = target(soak, op)
    if container is None or not container.cgroups_path:
        return
    path = cgroupfs.cgroup_dir(container.cgroups_path) / "cpuset.cpus"
    container.tampered = True
    try:
        path.write_text(op["cpus"])
        soak.outcome(f"wrote {op['cpus']} into {op['pod']}/{op['container']}'s cpuset.cpus")
    except OSError as err:
        soak.outcome(f"out-of-band write refused by the kernel: {err}")


def read_actual(container: Container) -> CPUSet | None:
    view = kernel.read([container])
    return view[container.cid].cpus if container.cid in view else None
