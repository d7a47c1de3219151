"""A pod whose container's start fails, driven as the kubelet drives it (``cpuset_lab.pod_worker``'s
rules): a Guaranteed, pinned or shared pod whose command does not exist (``/nonexistent``). The
plugin places its container at CreateContainer; StartContainer then fails when containerd cannot
create its task, and no NRI event follows (the plugin's start watch asks the runtime). The
kubelet keeps the last dead instance and creates the next attempt beside it after a back-off
(the walk counts it in steps): ``create-failing`` runs the pod and its first attempt,
``retry-failing`` each next one, after removing the dead instances but the last.

Each attempt is judged: its creation as any creation — a dead instance holds nothing, so what
fits must be admitted (the plugin gives back what dead containers hold before it refuses) and
a refusal must be one the model allows — and its start must fail with the runtime's own error,
never the plugin's (``outcomes.failed_as_the_runtime_says``)."""

from __future__ import annotations

from typing import Final

from cpuset_adapters.cri.client import CriError

from .history import Op
from .model import FAILED, INTEGER, PINNED, Pod
from .outcomes import MISSING_COMMAND, failed_as_the_runtime_says
from .parts import Checks, Kubelet, Model, PluginView, Recorder
from .pods import create_container, note_given, run_pod

NAME: Final = "app"
ALIVE: Final = ("CONTAINER_RUNNING", "CONTAINER_CREATED")
FAILED_AS_SAID: Final = "start-failed-as-the-runtime-said"
"""Counted with the operations (listed, not summed): attempts that failed as they must."""


def create_failing(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder,
                   checks: Checks, plugin: PluginView) -> None:
    """Run the pod and its first attempt."""
    pod = run_pod(op, kubelet=kubelet, model=model)
    _attempt(pod, op, 0, frozenset(), kubelet=kubelet, model=model, record=record,
             checks=checks, plugin=plugin)


def retry_failing(op: Op, *, kubelet: Kubelet, model: Model, record: Recorder,
                  checks: Checks, plugin: PluginView) -> None:
    """The next attempt (``op["attempt"]``), beside the last dead instance: the older ones are
    removed first, as the kubelet's garbage collector keeps only the most recent."""
    pod = model.node.pods.get(op["pod"])
    if pod is None:
        return  # deleted since
    instances = sorted((c for c in kubelet.list_containers(pod.pod_id) if c.name == NAME),
                       key=lambda c: c.created_at)
    if any(c.state in ALIVE for c in instances):
        record.outcome(f"{pod.name}/{NAME} not retried: an instance runs or waits")
        return
    for old in instances[:-1]:
        kubelet.remove(old.id)
    _attempt(pod, op, int(op["attempt"]), frozenset(c.id for c in instances[-1:]),
             kubelet=kubelet, model=model, record=record, checks=checks, plugin=plugin)


def _attempt(pod: Pod, op: Op, number: int, kept: frozenset[str], *, kubelet: Kubelet,
             model: Model, record: Recorder, checks: Checks, plugin: PluginView) -> None:
    """Create the attempt (judged), note what the plugin gave it, and start it: it must fail
    as the runtime says; it then holds nothing in the model."""
    kind = PINNED if pod.annotation is not None else op["type"]
    cpus = int(op.get("cpus", 1)) if kind == INTEGER else 0
    container = create_container(pod, NAME, kind, cpus=cpus, command=[MISSING_COMMAND],
                                 attempt=number, kubelet=kubelet, model=model, record=record,
                                 checks=checks, plugin=plugin, kept=kept)
    if container is None:
        return
    if kind in (INTEGER, PINNED):
        note_given(container, plugin)
    subject = f"{pod.name}/{NAME} attempt {number} ({kind})"
    failed: str | None = None
    try:
        kubelet.start(container.cid)
    except CriError as err:
        failed = err.details
    if failed_as_the_runtime_says(subject, failed, record=record):
        record.counted(FAILED_AS_SAID)
    with model.lock:
        container.state = FAILED
    checks.check_always()
