"""Every operation kind a history may hold, and the parts its operation is handed: the runner
holds all of them (``Parts``); each operation gets only those its signature names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from . import burst, failing, faults, hotplug, pods, unstarted, updates
from .history import Op
from .hotplug import Offlining
from .parts import Background, Checks, Kubelet, Model, Pace, PluginControls, Recorder, Runtime


@dataclass(frozen=True, slots=True, kw_only=True)
class Parts:
    """Everything an operation may touch, by role (``parts``)."""

    kubelet: Kubelet
    model: Model
    record: Recorder
    checks: Checks
    plugin: PluginControls
    runtime: Runtime
    pace: Pace
    background: Background
    cpus: Offlining


Operation = Callable[[Parts, Op], None]

DISPATCH: Final[Mapping[str, Operation]] = {
    "create": lambda p, op: pods.create(
        op, kubelet=p.kubelet, model=p.model, record=p.record, checks=p.checks,
        plugin=p.plugin, pace=p.pace),
    "create-failing": lambda p, op: failing.create_failing(
        op, kubelet=p.kubelet, model=p.model, record=p.record, checks=p.checks,
        plugin=p.plugin),
    "retry-failing": lambda p, op: failing.retry_failing(
        op, kubelet=p.kubelet, model=p.model, record=p.record, checks=p.checks,
        plugin=p.plugin),
    "create-unstarted": lambda p, op: unstarted.create_unstarted(
        op, kubelet=p.kubelet, model=p.model, record=p.record, checks=p.checks,
        plugin=p.plugin),
    "start-created": lambda p, op: unstarted.start_created(
        op, kubelet=p.kubelet, model=p.model, record=p.record, checks=p.checks,
        plugin=p.plugin, pace=p.pace),
    "delete": lambda p, op: pods.delete(
        op, kubelet=p.kubelet, model=p.model, record=p.record, runtime=p.runtime),
    "stop": lambda p, op: pods.stop(op, kubelet=p.kubelet, model=p.model, record=p.record),
    "resize": lambda p, op: updates.resize(
        op, kubelet=p.kubelet, model=p.model, record=p.record, checks=p.checks,
        plugin=p.plugin),
    "cri-cpuset": lambda p, op: updates.cri_cpuset(
        op, kubelet=p.kubelet, model=p.model, record=p.record, checks=p.checks,
        plugin=p.plugin),
    "oob-write": lambda p, op: updates.oob_write(op, model=p.model, record=p.record),
    "burst": lambda p, op: burst.burst(
        op, kubelet=p.kubelet, plugin=p.plugin, model=p.model, record=p.record,
        checks=p.checks),
    "plugin-kill": lambda p, op: faults.plugin_kill(
        op, plugin=p.plugin, model=p.model, record=p.record),
    "plugin-sigstop": lambda p, op: faults.plugin_sigstop(
        op, kubelet=p.kubelet, plugin=p.plugin, model=p.model, record=p.record, pace=p.pace),
    "containerd-restart": lambda p, op: faults.containerd_restart(
        op, kubelet=p.kubelet, runtime=p.runtime, model=p.model, record=p.record),
    "runc-refuse": lambda p, op: faults.runc_refuse(
        op, runtime=p.runtime, model=p.model, record=p.record),
    "runc-allow": lambda p, op: faults.runc_allow(
        op, runtime=p.runtime, model=p.model, record=p.record),
    "pin-namespaces": lambda p, op: faults.pin_namespaces(
        op, plugin=p.plugin, model=p.model, record=p.record, pace=p.pace),
    "status-hammer": lambda p, op: faults.status_hammer(
        op, plugin=p.plugin, background=p.background, record=p.record),
    "cpu-offline": lambda p, op: hotplug.cpu_offline(
        op, cpus=p.cpus, model=p.model, record=p.record, checks=p.checks, plugin=p.plugin,
        pace=p.pace),
    "cpu-online": lambda p, op: hotplug.cpu_online(
        op, cpus=p.cpus, model=p.model, record=p.record, checks=p.checks, plugin=p.plugin,
        pace=p.pace),
}
"""Operation kind → its operation, handed the parts it uses."""
