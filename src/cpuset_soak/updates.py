"""Changes to running containers: an integer container resized in place (CRI
UpdateContainerResources), a CRI ``--cpuset-cpus`` on a shared container, and someone writing
a container's ``cpuset.cpus`` behind the plugin's back. The outcome of what the plugin decides
is judged against the model."""

from __future__ import annotations

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_lab import faulty_runc
from cpuset_lab.resources import guaranteed

from .history import Op
from .lifetimes import judged
from .model import INTEGER, Container, Pod
from .outcomes import refused
from .parts import Checks, Kubelet, Model, Plugin, Recorder
from .pods import target
from .prediction import ADMIT, Prediction
from .reclass import changed, class_change


def resize(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder, checks: Checks,
           plugin: Plugin) -> None:
    """An in-place resize of an integer container (CRI UpdateContainerResources)."""
    container = target(op, model.node)
    if container is None or container.kind != INTEGER:
        return
    before, after = container.cpus, int(op["cpus"])
    checks.refresh_integers()
    with model.lock:
        prediction = (judged(model.node, lambda: model.node.predict_integer(after - before))
                      if after > before else ADMIT)
    subject = f"{op['pod']}/{op['container']} resize {before} -> {after}"
    try:
        kubelet.update_resources(container.cid, guaranteed(after, "64Mi"))
    except CriError as err:
        if faulty_runc.REFUSAL in err.details:  # decided, but runc refused to apply it
            record.outcome(f"{subject}: runc refused it")
            with model.lock:
                container.cpus = after
                model.node.uncertain += max(0, before - after)
            return
        refused(model.node.pods[op["pod"]], "", subject, prediction, details=err.details,
                managed=plugin.up, kubelet=kubelet, plugin=plugin, record=record)
        return
    with model.lock:
        container.cpus = after
        model.node.uncertain += max(0, before - after)
    record.outcome(f"{subject}: done")
    if not prediction.may_admit and plugin.up:
        record.violation(f"{subject} was done, but it does not fit "
                         f"({', '.join(sorted(prediction.reasons))})")
    checks.check_always()


def cri_cpuset(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder, checks: Checks,
               plugin: Plugin) -> None:
    """A CRI UpdateContainerResources --cpuset-cpus on a shared container: the plugin (or
    its verifier) puts it back on the pool. A container a Synchronize ran shared although it
    asks for more (a Guaranteed one when the pool would have been empty, a pin from a
    namespace then not allowed) changes class at any update: the plugin places it afresh as
    a creation would be, or refuses the update (``CpusetEngine.plan_resize``)."""
    container = target(op, model.node)
    if container is None:
        return
    container.tampered = True
    subject = f"CRI cpuset {op['cpus']} on {op['pod']}/{op['container']}"
    pod = model.node.pods[op["pod"]]
    change = class_change(pod, container, model=model, checks=checks) if plugin.up else None
    try:
        kubelet.update_resources(container.cid, cpuset_cpus=op["cpus"])
    except CriError as err:
        _cpuset_failed(pod, container, subject, change, details=err.details, kubelet=kubelet,
                       model=model, record=record, plugin=plugin)
        return
    if change is None:
        record.outcome(subject)
        return
    kind, prediction = change
    changed(pod, container, kind, model=model)
    record.outcome(f"{subject}: placed as {kind}")
    if not prediction.may_admit and plugin.up:
        record.violation(f"{subject} placed it as {kind}, but that is not allowed "
                         f"({', '.join(sorted(prediction.reasons))})")
    checks.check_always()


def _cpuset_failed(pod: Pod, container: Container, subject: str,
                   change: tuple[str, Prediction] | None, *, details: str, kubelet: Kubelet,
                   model: Model, record: Recorder, plugin: Plugin) -> None:
    """The CRI cpuset update failed: runc refused what the plugin decided (its class changes
    all the same), the plugin refused the class change, or neither was asked."""
    if change is not None and faulty_runc.REFUSAL in details:  # decided, not applied
        changed(pod, container, change[0], model=model)
        record.outcome(f"{subject}: placed as {change[0]}, runc refused it")
    elif change is not None:
        refused(pod, "", subject, change[1], details=details, managed=True,
                kubelet=kubelet, plugin=plugin, record=record)
    else:
        record.outcome(f"{subject} failed: {details[-120:]}")


def oob_write(op: Op, *, model: Model, record: Recorder) -> None:
    """Someone with access to cgroupfs writes the container's cpuset.cpus."""
    container = target(op, model.node)
    if container is None or not container.cgroups_path:
        return
    path = cgroupfs.cgroup_dir(container.cgroups_path) / "cpuset.cpus"
    container.tampered = True
    try:
        path.write_text(op["cpus"])
        record.outcome(f"wrote {op['cpus']} into {op['pod']}/{op['container']}'s cpuset.cpus")
    except OSError as err:
        record.outcome(f"out-of-band write refused by the kernel: {err}")
