"""A burst of shared pods created by three clients at once, as a node's pod starts come: with
``kill_at`` ≥ 0 the plugin is killed -9 after that many were sent (restarted once the burst is
over); with ``pin``, the pod at ``pin_at`` is pinned to those CPUs (a pin arriving mid-burst
shrinks containers that are being started: their dropped updates must be repaired)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from cpuset_core.cpuset import CPUSet

from .faults import restart_plugin
from .history import Op
from .lifetimes import judged
from .model import Container, Pod
from .outcomes import refused, refused_yet_exists
from .parts import Checks, Kubelet, Model, PluginControls, Recorder
from .pods import run_shared
from .prediction import Prediction

WORKERS = 3
"""Clients creating the burst's pods at once."""


def burst(op: Op, *, kubelet: Kubelet, plugin: PluginControls, model: Model,
          record: Recorder, checks: Checks) -> None:
    pods = [Pod(name=name, namespace="default", qos="Burstable") for name in op["pods"]]
    predictions = _predictions(op, pods, model)
    results: list[tuple[Pod, Future[Container | str]]] = []
    killed = False
    with ThreadPoolExecutor(WORKERS) as pool:
        for index, pod in enumerate(pods):
            if index == op["kill_at"]:
                killed = _kill_mid_burst(plugin, record)
            results.append((pod, pool.submit(run_shared, pod, kubelet)))
        if op["kill_at"] >= len(pods):
            killed = _kill_mid_burst(plugin, record)
    for pod, future in results:
        _judge(pod, future.result(), predictions[pod.name], killed=killed, kubelet=kubelet,
               plugin=plugin, model=model, record=record)
    record.outcome(f"burst of {len(pods)} shared pods{' (plugin killed)' if killed else ''}")
    if killed:
        restart_plugin(plugin=plugin, model=model, record=record)
    checks.check_always()


def _predictions(op: Op, pods: list[Pod], model: Model) -> dict[str, Prediction]:
    """What the plugin may answer for each pod (the pin's annotation set on its pod)."""
    node = model.node
    with model.lock:
        prediction = judged(node, node.predict_shared)
        predictions = {pod.name: prediction for pod in pods}
        if op.get("pin") is not None and 0 <= op.get("pin_at", -1) < len(pods):
            pinned = pods[op["pin_at"]]
            pinned.annotation = op["pin"]
            predictions[pinned.name] = judged(node, lambda: node.predict_pinned(pinned))
    return predictions


def _kill_mid_burst(plugin: PluginControls, record: Recorder) -> bool:
    record.fault("plugin-kill-mid-burst")
    plugin.kill()
    return True


def _judge(pod: Pod, outcome: Container | str, prediction: Prediction, *,
           killed: bool, kubelet: Kubelet, plugin: PluginControls, model: Model,
           record: Recorder) -> None:
    """One pod of the burst: created (``outcome``, a container) or refused (its error text);
    judged unless the plugin was killed during the burst."""
    with model.lock:
        model.node.pods[pod.name] = pod
    if isinstance(outcome, str):
        refused(pod, "app", f"{pod.name}/app (burst)", prediction, details=outcome,
                managed=not killed, kubelet=kubelet, plugin=plugin, record=record)
        return
    outcome.unmanaged = killed
    with model.lock:
        pod.containers["app"] = outcome
        if pod.annotation is not None and not killed:
            pod.pin = CPUSet.parse(pod.annotation)
    if not killed:
        refused_yet_exists(f"{pod.name}/app (burst)", outcome.cid, plugin=plugin,
                           record=record)
    if not killed and not prediction.may_admit:
        record.violation(f"{pod.name}/app ({outcome.kind}, burst) admitted, but it does "
                         f"not fit ({sorted(prediction.reasons)})")
