"""CPU hotplug as a fault: a CPU taken offline for real (``cpuN/online``) and brought back a
few steps later. Only where the soak may: as root, on cgroup v2 (v1 gives a CPU that comes
back to no pod cgroup, docs/vm-lab.md), never CPU 0, with at least three CPUs online — in
practice a VM lab guest (``--hotplug``).

The plugin notices by polling the online list; each operation waits until its state document
decides with the kernel's online CPUs, so what follows is judged against the new topology."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cpuset_adapters import cgroupfs
from cpuset_core.cpuset import CPUSet

from . import kernel
from .history import Op
from .model import INTEGER

if TYPE_CHECKING:
    from .runner import Soak

SYS_CPU: Final = Path("/sys/devices/system/cpu")
NOTICE: Final = 10.0
"""Seconds (times ``--time-scale``) the plugin has to decide with a new online set (it polls
every 2 s)."""


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


def cpu_offline(soak: Soak, op: Op) -> None:
    _switch(soak, int(op["cpu"]), online=False)


def cpu_online(soak: Soak, op: Op) -> None:
    _switch(soak, int(op["cpu"]), online=True)


def _switch(soak: Soak, cpu: int, *, online: bool) -> None:
    with soak.lock:
        if (cpu in soak.model.online) == online:
            soak.outcome(f"CPU {cpu} is {'on' if online else 'off'}line already")
            return
    if not online and cpu not in soak.offlinable:  # a replayed history, here without --hotplug
        soak.outcome(f"CPU {cpu} not taken offline: hotplug is off in this run")
        return
    kind = "cpu-online" if online else "cpu-offline"
    soak.refresh_integers()  # which integer containers hold the CPU
    try:
        (SYS_CPU / f"cpu{cpu}" / "online").write_text("1" if online else "0")
    except OSError as err:
        soak.outcome(f"{kind} {cpu}: the kernel refused it: {err}")
        return
    soak.tally.faults[kind] += 1
    with soak.lock:
        if online:
            soak.taken.discard(cpu)
            soak.model.came_online(cpu)
        else:
            soak.taken.add(cpu)
            soak.model.went_offline(cpu)
        expected = soak.model.online
    began = time.monotonic()
    deadline = began + NOTICE * soak.node.scale
    while (decided := _plugin_online(soak)) != expected:
        if time.monotonic() > deadline:
            soak.violation(f"CPU {cpu} went {'on' if online else 'off'}line: the plugin still "
                           f"decides with online CPUs {decided} after "
                           f"{time.monotonic() - began:.0f} s, the kernel's are {expected}")
            return
        time.sleep(0.1)
    while not _moved(soak, cpu) and time.monotonic() < deadline:
        time.sleep(0.1)  # what follows is predicted from where integer containers run
    soak.outcome(f"CPU {cpu} {'on' if online else 'off'}line; the plugin decides with "
                 f"{expected} after {time.monotonic() - began:.1f} s")


def _moved(soak: Soak, cpu: int) -> bool:
    """Every integer container that held ``cpu`` runs on as many online CPUs as it asked
    (the settle judges where; this only waits for the move)."""
    with soak.lock:
        moving = [c for c in soak.model.of_kind(INTEGER) if cpu in c.actual]
        online = soak.model.online
    view = kernel.read(moving)
    return all(c.cid in view and len(view[c.cid].cpus) == c.cpus
               and view[c.cid].cpus.issubset(online)
               for c in moving)


def _plugin_online(soak: Soak) -> CPUSet | None:
    """The online CPUs the plugin decides with (None: no answer, or none it says)."""
    try:
        said = soak.node.state().get("online")
        return CPUSet.parse(said) if isinstance(said, str) else None
    except (OSError, ValueError):
        return None


def restore(cpus: set[int]) -> None:
    """Bring the CPUs the soak took offline back, whatever happened (a guest's later tests
    need them)."""
    for cpu in sorted(cpus):
        try:
            (SYS_CPU / f"cpu{cpu}" / "online").write_text("1")
        except OSError:
            continue
