"""A container created and never started, as a kubelet leaves one that deleted the pod between
its two calls or gave up on a start that timed out: ``create-unstarted`` creates a pod's
container (Guaranteed, pinned or shared) and does not start it. It holds what it was given for
the plugin's start grace (``runtime.start_grace``: 10 s times the time scale here) and nothing
after (``lifetimes``). ``start-created`` starts it later: within the grace it must run with
what it holds; ``late``, the operation waits until the grace has passed and the plugin's state
document no longer lists it, and the start must then be refused with ``started-too-late``. Or
the walk deletes its pod meanwhile."""

from __future__ import annotations

import time
from typing import Final

from cpuset_adapters.cri.client import CriError

from .history import Op
from .lifetimes import age, given
from .model import CREATED, EXPIRED, INTEGER, PINNED, RUNNING, Container
from .outcomes import TOO_LATE, reason_of
from .parts import Checks, Kubelet, Model, Pace, PluginView, Recorder
from .pods import create_container, note_given, run_pod

NAME: Final = "app"
POLL: Final = 0.1


def create_unstarted(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder,
                     checks: Checks, plugin: PluginView) -> None:
    kind = op["type"]
    pod = run_pod(op, kubelet=kubelet, model=model)
    own = PINNED if pod.annotation is not None else kind
    container = create_container(pod, NAME, own, cpus=int(op.get("cpus", 1)),
                                 kubelet=kubelet, model=model, record=record, checks=checks,
                                 plugin=plugin)
    if container is not None and own in (INTEGER, PINNED):
        note_given(container, plugin)
    checks.check_always()


def start_created(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder,
                  checks: Checks, plugin: PluginView, pace: Pace) -> None:
    """Start the pod's created container; ``late``: once its grace has passed and the plugin
    has given its CPUs back."""
    pod = model.node.pods.get(op["pod"])
    container = pod.containers.get(NAME) if pod is not None else None
    if container is None or container.state not in (CREATED, EXPIRED):
        return  # refused at its creation, or its pod deleted
    subject = f"{op['pod']}/{NAME} ({container.kind}, created)"
    if op.get("late") and not _given_back(container, subject, model=model, record=record,
                                          plugin=plugin, pace=pace):
        return
    began = age(model.node, container)
    try:
        started = kubelet.start(container.cid)
    except CriError as err:
        _refused(container, subject, err.details, model=model, record=record)
    else:
        _started(container, subject, began, model=model, record=record)
        with model.lock:
            container.pid, container.cgroups_path = started.pid, started.cgroups_path
    checks.check_always()


def _given_back(container: Container, subject: str, *, model: Model, record: Recorder,
                plugin: PluginView, pace: Pace) -> bool:
    """Wait past the grace until the plugin's state document no longer lists ``container``;
    a violation (False) when it still does ``slack`` after the grace."""
    grace = model.node.grace
    time.sleep(max(0.0, grace.seconds - age(model.node, container)))
    while True:
        try:
            listed = given(plugin.state(), container.cid) is not None
        except OSError:
            listed = True  # not answering: ask again
        if not listed:
            return True
        if age(model.node, container) >= grace.seconds + grace.slack:
            record.violation(f"{subject} was created {age(model.node, container):.1f} s ago "
                             f"and never started, yet the plugin still holds it "
                             f"{grace.slack:g} s after the {grace.seconds:g} s grace")
            return False
        time.sleep(pace.seconds(POLL))


def _refused(container: Container, subject: str, details: str, *, model: Model,
             record: Recorder) -> None:
    """The start was refused: only once the grace may have passed, and only as too late."""
    after, grace = age(model.node, container), model.node.grace
    reason = reason_of(details)
    if reason is not None:
        record.refusal(reason)
    record.outcome(f"start of {subject} refused {after:.1f} s after its creation: "
                   f"{reason or 'not by the plugin'}: {details[-160:]}")
    if reason != TOO_LATE:
        record.violation(f"{subject}: its start failed {after:.1f} s after its creation "
                         f"without the plugin's {TOO_LATE} refusal: {details}")
    elif after < grace.seconds - grace.margin:
        record.violation(f"{subject}: its start was refused as {TOO_LATE} {after:.1f} s after "
                         f"its creation, within the {grace.seconds:g} s grace: {details}")
    with model.lock:
        container.state = EXPIRED


def _started(container: Container, subject: str, began: float, *, model: Model,
             record: Recorder) -> None:
    """The start was carried out: only before the plugin must have given the CPUs back."""
    grace = model.node.grace
    record.outcome(f"started {subject} {began:.1f} s after its creation")
    if container.state == EXPIRED or began >= grace.seconds + grace.slack:
        record.violation(f"{subject} started {began:.1f} s after its creation, past the "
                         f"{grace.seconds:g} s grace (+{grace.slack:g} s): its CPUs were "
                         f"given back, so its start must be refused ({TOO_LATE})")
    with model.lock:
        container.state = RUNNING
