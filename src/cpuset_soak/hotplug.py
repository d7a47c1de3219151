"""CPU hotplug as a fault: a CPU taken offline for real (``cpuN/online``) and brought back a
few steps later. Only where the soak may: as root, on cgroup v2 (v1 gives a CPU that comes
back to no pod cgroup, docs/vm-lab.md), never CPU 0, with at least three CPUs online — in
practice a VM lab guest (``--hotplug``).

The plugin notices by polling the online list; each operation waits until its state document
decides with the kernel's online CPUs, so what follows is judged against the new topology."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cpuset_adapters import cgroupfs
from cpuset_core.cpuset import EMPTY, CPUSet

from . import kernel
from .history import Op
from .model import INTEGER
from .parts import Checks, Model, Pace, Recorder, StatusDocument

SYS_CPU: Final = Path("/sys/devices/system/cpu")
NOTICE: Final = 10.0
"""Seconds (times ``--time-scale``) the plugin has to decide with a new online set (it polls
every 2 s)."""


@dataclass(frozen=True, slots=True)
class Offlining:
    """The CPUs the soak may take offline (``--hotplug``; none: a replayed history's are
    skipped) and those it took and has not brought back yet (``taken``)."""

    offlinable: CPUSet = EMPTY
    taken: set[int] = field(default_factory=set)
    sys_cpu: Path = SYS_CPU


class HotplugUnavailable(Exception):  # noqa: N818 - reads as what the machine is
    """This machine cannot take the soak's CPUs offline; the message says why."""


def usable_cpus(online: CPUSet, *, cgroup_version: int, sys_cpu: Path = SYS_CPU) -> CPUSet:
    """The CPUs the soak may take offline: online, not CPU 0, with an ``online`` file."""
    if cgroup_version != 2:
        raise HotplugUnavailable(
            f"--hotplug needs cgroup v2, this machine has v{cgroup_version} (v1 restores a CPU "
            "that comes back online to no pod cgroup: docs/vm-lab.md)")
    if len(online) < 3:
        raise HotplugUnavailable(f"--hotplug needs three online CPUs, this machine has "
                                 f"{online.format()}")
    usable = CPUSet(cpu for cpu in online
                    if cpu != 0 and (sys_cpu / f"cpu{cpu}" / "online").is_file())
    if not usable:
        raise HotplugUnavailable(f"--hotplug: no CPU but 0 can go offline here (no "
                                 f"{sys_cpu}/cpuN/online file)")
    return usable


def machine_cgroup_version() -> int:
    return cgroupfs.cgroup_version(cgroupfs.CGROUP_ROOT)


def cpu_offline(op: Op, *, cpus: Offlining, model: Model, record: Recorder, checks: Checks,
                plugin: StatusDocument, pace: Pace) -> None:
    _switch(int(op["cpu"]), online=False, cpus=cpus, model=model, record=record,
            checks=checks, plugin=plugin, pace=pace)


def cpu_online(op: Op, *, cpus: Offlining, model: Model, record: Recorder, checks: Checks,
               plugin: StatusDocument, pace: Pace) -> None:
    _switch(int(op["cpu"]), online=True, cpus=cpus, model=model, record=record,
            checks=checks, plugin=plugin, pace=pace)


def _switch(cpu: int, *, online: bool, cpus: Offlining, model: Model,
            record: Recorder, checks: Checks, plugin: StatusDocument, pace: Pace) -> None:
    with model.lock:
        if (cpu in model.node.online) == online:
            record.outcome(f"CPU {cpu} is {'on' if online else 'off'}line already")
            return
    if not online and cpu not in cpus.offlinable:  # a replayed history, here without --hotplug
        record.outcome(f"CPU {cpu} not taken offline: hotplug is off in this run")
        return
    kind = "cpu-online" if online else "cpu-offline"
    checks.refresh_integers()  # which integer containers hold the CPU
    try:
        (cpus.sys_cpu / f"cpu{cpu}" / "online").write_text("1" if online else "0")
    except OSError as err:
        record.outcome(f"{kind} {cpu}: the kernel refused it: {err}")
        return
    record.fault(kind)
    with model.lock:
        if online:
            cpus.taken.discard(cpu)
            model.node.came_online(cpu)
        else:
            cpus.taken.add(cpu)
            model.node.went_offline(cpu)
        expected = model.node.online
    _noticed(cpu, expected, online=online, model=model, record=record, plugin=plugin,
             pace=pace)


def _noticed(cpu: int, expected: CPUSet, *, online: bool, model: Model,
             record: Recorder, plugin: StatusDocument, pace: Pace) -> None:
    """Wait until the plugin decides with the ``expected`` online CPUs and has moved the
    integer containers off ``cpu``; a violation when it does not in time."""
    began = time.monotonic()
    deadline = began + pace.seconds(NOTICE)
    while (decided := _plugin_online(plugin)) != expected:
        if time.monotonic() > deadline:
            record.violation(f"CPU {cpu} went {'on' if online else 'off'}line: the plugin "
                             f"still decides with online CPUs {decided} after "
                             f"{time.monotonic() - began:.0f} s, the kernel's are {expected}")
            return
        time.sleep(0.1)
    while not _moved(cpu, model) and time.monotonic() < deadline:
        time.sleep(0.1)  # what follows is predicted from where integer containers run
    record.outcome(f"CPU {cpu} {'on' if online else 'off'}line; the plugin decides with "
                   f"{expected} after {time.monotonic() - began:.1f} s")


def _moved(cpu: int, model: Model) -> bool:
    """Every integer container that held ``cpu`` runs on as many online CPUs as it asked
    (the settle judges where; this only waits for the move)."""
    with model.lock:
        moving = [c for c in model.node.running() if c.kind == INTEGER and cpu in c.actual]
        online = model.node.online
    view = kernel.read(moving)
    return all(c.cid in view and len(view[c.cid].cpus) == c.cpus
               and view[c.cid].cpus.issubset(online)
               for c in moving)


def _plugin_online(plugin: StatusDocument) -> CPUSet | None:
    """The online CPUs the plugin decides with (None: no answer, or none it says)."""
    try:
        said = plugin.state().get("online")
        return CPUSet.parse(said) if isinstance(said, str) else None
    except (OSError, ValueError):
        return None


def restore(cpus: Offlining) -> None:
    """Bring the CPUs the soak took offline back, whatever happened (a guest's later tests
    need them)."""
    for cpu in sorted(cpus.taken):
        try:
            (cpus.sys_cpu / f"cpu{cpu}" / "online").write_text("1")
        except OSError:
            continue
