"""The faults, carried out: the plugin killed -9 and restarted (also in the middle of a burst
of creations), the plugin SIGSTOPped past the runtime's NRI request timeout and continued,
containerd restarted, runc refusing a container's updates (the lab's ``runc-faulty``
handler), a configuration reload narrowing who may pin, and a reader hammering the status
socket while other operations run."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Final

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.status_socket import read_status
from cpuset_core.cpuset import CPUSet
from cpuset_lab.pod_spec import PodSpec, cgroup_parent

from . import operations
from .history import Op
from .model import PINNED, SHARED, Container, Pod

if TYPE_CHECKING:
    from .runner import Soak


def plugin_kill(soak: Soak, _op: Op) -> None:
    soak.tally.faults["plugin-kill"] += 1
    soak.node.plugin_up = False
    soak.node.plugin.kill()
    soak.outcome("plugin killed -9")
    restart_plugin(soak)


def restart_plugin(soak: Soak) -> None:
    soak.node.start_plugin()
    with soak.lock:
        soak.model.resynchronized()
    soak.outcome("plugin restarted and synchronized")


def burst(soak: Soak, op: Op) -> None:
    """Shared pods created by three clients at once; with ``kill_at`` ≥ 0 the plugin is
    killed -9 after that many were sent, and restarted once the burst is over; with ``pin``,
    the pod at ``pin_at`` is pinned to those CPUs (a pin arriving mid-burst shrinks
    containers that are being started: their dropped updates must be repaired)."""
    prediction = soak.model.predict_shared()
    pods = [Pod(name=name, namespace="default", qos="Burstable") for name in op["pods"]]
    predictions = {pod.name: prediction for pod in pods}
    if op.get("pin") is not None and 0 <= op.get("pin_at", -1) < len(pods):
        pinned = pods[op["pin_at"]]
        pinned.annotation = op["pin"]
        predictions[pinned.name] = soak.model.predict_pinned(pinned)
    results: list[tuple[Pod, Future[Container | str]]] = []
    killed = False
    with ThreadPoolExecutor(3) as pool:
        for index, pod in enumerate(pods):
            if index == op["kill_at"]:
                killed = _kill_mid_burst(soak)
            results.append((pod, pool.submit(_create_shared, soak, pod)))
        if op["kill_at"] >= len(pods):
            killed = _kill_mid_burst(soak)
    for pod, future in results:
        outcome = future.result()
        with soak.lock:
            soak.model.pods[pod.name] = pod
        if isinstance(outcome, str):
            operations.refused(soak, pod, "app", f"{pod.name}/app (burst)",
                               predictions[pod.name], details=outcome, managed=not killed)
            continue
        outcome.unmanaged = killed
        with soak.lock:
            pod.containers["app"] = outcome
            if pod.annotation is not None and not killed:
                pod.pin = CPUSet.parse(pod.annotation)
        if not killed:
            operations.refused_yet_exists(soak, f"{pod.name}/app (burst)", outcome.cid)
        if not killed and not predictions[pod.name].may_admit:
            soak.violation(f"{pod.name}/app ({outcome.kind}, burst) admitted, but it does "
                           f"not fit ({sorted(predictions[pod.name].reasons)})")
    soak.outcome(f"burst of {len(pods)} shared pods{' (plugin killed)' if killed else ''}")
    if killed:
        restart_plugin(soak)
    soak.check_always()


def _kill_mid_burst(soak: Soak) -> bool:
    soak.tally.faults["plugin-kill-mid-burst"] += 1
    soak.node.plugin_up = False
    soak.node.plugin.kill()
    return True


def _create_shared(soak: Soak, pod: Pod) -> Container | str:
    """Runs in a worker: CRI calls only; the model is updated by the caller."""
    pod.uid = str(uuid.uuid4())  # per run: a rerun of a seed never meets an earlier run's cgroups
    soak.uids.add(pod.uid)
    annotations = {operations.KEY: pod.annotation} if pod.annotation is not None else {}
    pod.pod_id = soak.cri.run_pod(PodSpec(name=pod.name, uid=pod.uid, annotations=annotations,
                                          cgroup_parent=cgroup_parent(pod.qos, pod.uid)))
    try:
        cid = soak.cri.create_container(pod.pod_id, None, "app", soak.image,
                                        resources=operations.resources(SHARED, 0))
    except CriError as err:
        return err.details
    soak.cids.add(cid)
    soak.cri.start(cid)
    status = soak.cri.container_status(cid)
    kind = PINNED if pod.annotation is not None else SHARED
    return Container(pod=pod.name, name="app", kind=kind, cid=cid, pid=status.pid or 0,
                     cgroups_path=status.cgroups_path or "")


def plugin_sigstop(soak: Soak, op: Op) -> None:
    """SIGSTOP past the request timeout, a shared pod created meanwhile, then SIGCONT."""
    soak.tally.faults["plugin-sigstop"] += 1
    pid = soak.node.plugin.pid
    synchronized = soak.node.plugin.count("synchronized")
    os.kill(pid, signal.SIGSTOP)
    soak.node.plugin_up = False
    try:
        creating = threading.Thread(target=_create_during_stop, args=(soak, op))
        creating.start()
        time.sleep(soak.node.request_timeout + 1.5)
    finally:
        os.kill(pid, signal.SIGCONT)
    creating.join(timeout=120 * soak.node.scale)
    soak.outcome("plugin stopped past the request timeout, then continued")
    deadline = time.monotonic() + 15 * soak.node.scale
    while time.monotonic() < deadline and soak.node.plugin.count("synchronized") == synchronized:
        time.sleep(0.1)  # containerd may have dropped it: it reconnects and synchronizes
    soak.node.plugin_up = True
    if soak.node.plugin.count("synchronized") > synchronized:
        with soak.lock:
            soak.model.resynchronized()
        soak.outcome("plugin reconnected and synchronized")


def _create_during_stop(soak: Soak, op: Op) -> None:
    if op.get("pod") is None:
        return
    pod = Pod(name=op["pod"], namespace="default", qos="Burstable")
    outcome = _create_shared(soak, pod)
    with soak.lock:
        soak.model.pods[pod.name] = pod
        if isinstance(outcome, Container):
            outcome.unmanaged = True
            pod.containers["app"] = outcome
    soak.outcome(f"{pod.name}/app during the stop: "
                 f"{'created' if isinstance(outcome, Container) else outcome[-160:]}")


def containerd_restart(soak: Soak, _op: Op) -> None:
    soak.tally.faults["containerd-restart"] += 1
    soak.node.plugin_up = False
    soak.node.plugin.next_join(soak.node.lab.restart)
    soak.node.plugin_up = True
    lost_with_the_runtime(soak)
    with soak.lock:
        soak.model.resynchronized()
    soak.outcome("containerd restarted; the plugin reconnected and synchronized")


LOST: Final = "lost-at-containerd-restart"
"""Counted with the operations (listed, not summed): what the runtime did, not the soak."""


def lost_with_the_runtime(soak: Soak) -> None:
    """containerd cleans up, at its start, the shims it cannot reach ("cleaning leaked shim
    process"), and their containers exit: on a loaded machine a restart can take a container
    with it (seed 1125 on 1.7, step 97). That is the runtime's loss, not the plugin's: it is
    counted and released in the model. Only here: anywhere else, a container the model runs
    must run."""
    states = {c.id: c.state for c in soak.cri.list_containers()}
    with soak.lock:
        for container in soak.model.running():
            if states.get(container.cid, "CONTAINER_RUNNING") == "CONTAINER_EXITED":
                soak.model.release(container, "exited")
                soak.tally.ops[LOST] += 1
                soak.outcome(f"{container.pod}/{container.name} exited with the restart "
                             "(containerd cleaned up its shim)")


def runc_refuse(soak: Soak, op: Op) -> None:
    container = operations.target(soak, op)
    if container is None:
        return
    soak.tally.faults["runc-refuse"] += 1
    soak.node.lab.update_faults.fail(container.cid)
    container.faulted = True
    soak.outcome(f"runc refuses updates of {op['pod']}/{op['container']}")


def runc_allow(soak: Soak, op: Op) -> None:
    pod = soak.model.pods.get(op["pod"])
    container = pod.containers.get(op["container"]) if pod is not None else None
    if container is None:
        return
    soak.node.lab.update_faults.allow(container.cid)
    container.faulted = False
    soak.outcome(f"runc takes updates of {op['pod']}/{op['container']} again")


def pin_namespaces(soak: Soak, op: Op) -> None:
    """Rewrite the allowlist and SIGHUP; wait until the plugin says it applied it."""
    soak.tally.faults["config-reload"] += 1
    namespaces = tuple(op["namespaces"])
    before = _reloads(soak)
    soak.node.write_config(namespaces)
    soak.node.reload()
    deadline = time.monotonic() + 10 * soak.node.scale
    while _reloads(soak) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    with soak.lock:
        soak.model.namespaces = namespaces
    soak.outcome(f"pinning.namespaces reloaded: {list(namespaces)}")


def _reloads(soak: Soak) -> int:
    text = soak.node.plugin.text()
    return text.count(": applied ") + text.count("configuration unchanged")


def status_hammer(soak: Soak, op: Op) -> None:
    """Read the status socket without pause for ``seconds``, beside the next operations."""
    soak.tally.faults["status-hammer"] += 1
    until = time.monotonic() + float(op["seconds"])
    socket = soak.node.plugin.status_socket
    assert socket is not None

    def hammer() -> None:
        while time.monotonic() < until:
            try:
                read_status(socket, timeout=2.0)
                soak.tally.ops["status-read"] += 1
            except OSError:
                time.sleep(0.05)  # the plugin is restarting

    thread = threading.Thread(target=hammer, daemon=True)
    thread.start()
    soak.hammers.append(thread)
    soak.outcome(f"status socket hammered for {op['seconds']} s")
