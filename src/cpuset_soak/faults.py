"""The faults, carried out: the plugin killed -9 and restarted, the plugin SIGSTOPped past
the runtime's NRI request timeout and continued, containerd restarted, runc refusing a
container's updates (the lab's ``runc-faulty`` handler), a configuration reload narrowing who
may pin, and a reader hammering the status socket while other operations run. (A kill in the
middle of a burst of creations is ``burst``'s.)"""

from __future__ import annotations

import threading
import time
from typing import Final

from cpuset_adapters.status_socket import read_status

from .history import Op
from .model import Container, Pod
from .parts import Background, Kubelet, Model, Pace, PluginControls, Recorder, Runtime
from .pods import run_shared, target
from .resync import resynchronized


def plugin_kill(_op: Op, *, plugin: PluginControls, model: Model, record: Recorder) -> None:
    record.fault("plugin-kill")
    plugin.kill()
    record.outcome("plugin killed -9")
    restart_plugin(plugin=plugin, model=model, record=record)


def restart_plugin(*, plugin: PluginControls, model: Model, record: Recorder) -> None:
    plugin.restart()
    with model.lock:
        resynchronized(model.node)
    record.outcome("plugin restarted and synchronized")


def plugin_sigstop(op: Op, *, kubelet: Kubelet, plugin: PluginControls, model: Model,
                   record: Recorder, pace: Pace) -> None:
    """SIGSTOP past the request timeout, a shared pod created meanwhile, then SIGCONT."""
    record.fault("plugin-sigstop")
    synchronized = plugin.synchronizations()
    plugin.pause()
    try:
        creating = threading.Thread(target=_create_during_stop,
                                    args=(op, kubelet, model, record))
        creating.start()
        time.sleep(pace.request_timeout + 1.5)
    finally:
        plugin.resume()
    creating.join(timeout=pace.seconds(120))
    record.outcome("plugin stopped past the request timeout, then continued")
    deadline = time.monotonic() + pace.seconds(15)
    while time.monotonic() < deadline and plugin.synchronizations() == synchronized:
        time.sleep(0.1)  # containerd may have dropped it: it reconnects and synchronizes
    plugin.up = True
    if plugin.synchronizations() > synchronized:
        with model.lock:
            resynchronized(model.node)
        record.outcome("plugin reconnected and synchronized")


def _create_during_stop(op: Op, kubelet: Kubelet, model: Model, record: Recorder) -> None:
    if op.get("pod") is None:
        return
    pod = Pod(name=op["pod"], namespace="default", qos="Burstable")
    outcome = run_shared(pod, kubelet)
    with model.lock:
        model.node.pods[pod.name] = pod
        if isinstance(outcome, Container):
            outcome.unmanaged = True
            pod.containers["app"] = outcome
    record.outcome(f"{pod.name}/app during the stop: "
                   f"{'created' if isinstance(outcome, Container) else outcome[-160:]}")


def containerd_restart(_op: Op, *, kubelet: Kubelet, runtime: Runtime, model: Model,
                       record: Recorder) -> None:
    record.fault("containerd-restart")
    runtime.restart()
    lost_with_the_runtime(kubelet=kubelet, model=model, record=record)
    with model.lock:
        resynchronized(model.node)
    record.outcome("containerd restarted; the plugin reconnected and synchronized")


LOST: Final = "lost-at-containerd-restart"
"""Counted with the operations (listed, not summed): what the runtime did, not the soak."""


def lost_with_the_runtime(*, kubelet: Kubelet, model: Model, record: Recorder) -> None:
    """containerd cleans up, at its start, the shims it cannot reach ("cleaning leaked shim
    process"), and their containers exit: on a loaded machine a restart can take a container
    with it (seed 1125 on 1.7, step 97). That is the runtime's loss, not the plugin's: it is
    counted and released in the model. Only here: anywhere else, a container the model runs
    must run."""
    states = {c.id: c.state for c in kubelet.list_containers()}
    with model.lock:
        for container in model.node.running():
            if states.get(container.cid, "CONTAINER_RUNNING") == "CONTAINER_EXITED":
                model.node.release(container, "exited")
                record.counted(LOST)
                record.outcome(f"{container.pod}/{container.name} exited with the restart "
                               "(containerd cleaned up its shim)")


def runc_refuse(op: Op, *, runtime: Runtime, model: Model, record: Recorder) -> None:
    container = target(op, model.node)
    if container is None:
        return
    record.fault("runc-refuse")
    runtime.refuse_updates(container.cid)
    container.faulted = True
    record.outcome(f"runc refuses updates of {op['pod']}/{op['container']}")


def runc_allow(op: Op, *, runtime: Runtime, model: Model, record: Recorder) -> None:
    pod = model.node.pods.get(op["pod"])
    container = pod.containers.get(op["container"]) if pod is not None else None
    if container is None:
        return
    runtime.allow_updates(container.cid)
    container.faulted = False
    record.outcome(f"runc takes updates of {op['pod']}/{op['container']} again")


def pin_namespaces(op: Op, *, plugin: PluginControls, model: Model, record: Recorder,
                   pace: Pace) -> None:
    """Rewrite the allowlist and SIGHUP; wait until the plugin says it applied it."""
    record.fault("config-reload")
    namespaces = tuple(op["namespaces"])
    before = plugin.reloads()
    plugin.reload(namespaces)
    deadline = time.monotonic() + pace.seconds(10)
    while plugin.reloads() == before and time.monotonic() < deadline:
        time.sleep(0.05)
    with model.lock:
        model.node.namespaces = namespaces
    record.outcome(f"pinning.namespaces reloaded: {list(namespaces)}")


def status_hammer(op: Op, *, plugin: PluginControls, background: Background,
                  record: Recorder) -> None:
    """Read the status socket without pause for ``seconds``, beside the next operations."""
    record.fault("status-hammer")
    until = time.monotonic() + float(op["seconds"])
    socket = plugin.status_socket

    def hammer() -> None:
        while time.monotonic() < until:
            try:
                read_status(socket, timeout=2.0)
                record.counted("status-read")
            except OSError:
                time.sleep(0.05)  # the plugin is restarting

    background.start(hammer)
    record.outcome(f"status socket hammered for {op['seconds']} s")
