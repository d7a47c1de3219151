"""Which file carries an idle bound on one CPU here, and what it must hold: the CPU's idle
states past the bound disabled (``cpuN/cpuidle/stateK/disable``, readable back per state), or,
for a process without CAP_SYS_ADMIN (which the kernel's cpuidle store wants whatever the
file's mode), the CPU device's resume-latency PM QoS request
(``cpuN/power/pm_qos_resume_latency_us``), which uid 0 writes without any capability and
which the cpuidle governors honour the same way: no state whose exit latency exceeds it.

The core's wanted state says only the bound (µs per CPU); the mechanism is the node's fact,
decided here, so that the journal (keyed by file) undoes either without knowing which.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from cpuset_core.cpuset import CPUSet

if TYPE_CHECKING:
    from cpuset_adapters.quiet.host import QuietHost

CPUIDLE: Final = "cpuidle"
"""The bound carried by ``stateK/disable`` (root with CAP_SYS_ADMIN: the host's path)."""
PM_QOS: Final = "pm-qos"
"""The bound carried by ``power/pm_qos_resume_latency_us`` (no CAP_SYS_ADMIN: a pod's)."""
NONE: Final = "none"
"""Not carried: neither file can be written here (the request was unmet at admission)."""

PM_QOS_FILE: Final = "power/pm_qos_resume_latency_us"


def pm_qos_text(bound: int) -> str:
    """The file's spelling of "at most ``bound`` µs": ``n/a`` for 0 (polling only), since the
    kernel reads ``0`` as no constraint at all (drivers/base/power/sysfs.c)."""
    return "n/a" if bound == 0 else str(bound)


def pm_qos_bound(text: str) -> int | None:
    """The bound (µs) a value of the file holds; ``None``: no constraint (``0``). Raises
    ``ValueError`` for anything the kernel would not show there."""
    text = text.strip()
    if text == "n/a":
        return 0
    value = int(text)
    if value < 0:
        raise ValueError(f"a negative resume latency: {value}")
    return None if value == 0 else value


@dataclass(slots=True)
class IdleFiles:
    """What one CPU's bound needs: the mechanism and the files with their values; ``skipped``
    why nothing can be written here (the admission said so already), ``problem`` a file not
    understood."""

    via: str
    files: dict[str, str] = field(default_factory=dict)
    skipped: str = ""
    problem: str = ""


def carrier(host: QuietHost, cpu: int, admin: bool) -> str:
    """Which mechanism carries a bound on ``cpu`` here (``admin``: this process has
    CAP_SYS_ADMIN): :data:`CPUIDLE` when it may write every state's ``disable``, else
    :data:`PM_QOS` when it may write the resume latency, else :data:`NONE`. A CPU without
    idle states has nothing to bound: :data:`NONE`."""
    states = host.idle_states(cpu)
    if not states:
        return NONE
    if admin and all(os.access(state.disable, os.W_OK) for state in states):
        return CPUIDLE
    if os.access(host.resume_latency(cpu), os.W_OK):
        return PM_QOS
    return NONE


def wanted(host: QuietHost, cpu: int, bound: int, admin: bool,
           originals: Mapping[str, str]) -> IdleFiles:
    """What ``cpu``'s files must hold for ``bound`` (µs). The resume latency keeps a tighter
    constraint the node had before (``originals``, or the file now): never loosened."""
    via = carrier(host, cpu, admin)
    if via == CPUIDLE:
        return IdleFiles(via, {state.disable: "1" for state in host.idle_states(cpu)
                               if state.latency > bound})
    if via == NONE:
        why = "; ".join(part.format(cpus=cpu) for part in _why_cpu(host, cpu))
        return IdleFiles(via, skipped=f"idle states of CPU {cpu}: bound {bound} µs not "
                                      f"carried ({why})")
    path = host.resume_latency(cpu)
    had = originals.get(path) or host.read(path)
    try:
        before = pm_qos_bound(had)
    except ValueError:
        return IdleFiles(NONE, problem=f"{path}: reads {had!r}, not a resume latency (µs, "
                                       f"'n/a' or '0'); left as it is")
    if before is not None and before <= bound:
        return IdleFiles(via)  # the node's own constraint already holds it
    return IdleFiles(via, {path: pm_qos_text(bound)})


def why_not(host: QuietHost, cpus: CPUSet, admin: bool) -> list[str]:
    """Why an idle bound cannot be carried on some of ``cpus`` here, naming both mechanisms
    (nothing: it can on all)."""
    missing = CPUSet(cpu for cpu in cpus if not host.idle_states(cpu))
    groups: dict[tuple[str, str], list[int]] = {}
    for cpu in cpus - missing:
        if carrier(host, cpu, admin) == NONE:
            groups.setdefault(_why_cpu(host, cpu), []).append(cpu)
    why = [f"idle states: no cpuidle states for CPU(s) {missing}"] if missing else []
    for (cpuidle, pm_qos), group in groups.items():
        held = CPUSet(group)
        why.append(f"idle states: {cpuidle.format(cpus=held)}, and {pm_qos.format(cpus=held)}")
    return why


def _why_cpu(host: QuietHost, cpu: int) -> tuple[str, str]:
    """Why neither mechanism is open on ``cpu`` (a CPU with idle states whose
    :func:`carrier` is :data:`NONE`), with ``{cpus}`` where its CPUs go."""
    if all(os.access(state.disable, os.W_OK) for state in host.idle_states(cpu)):
        cpuidle = "disabling one needs CAP_SYS_ADMIN, which this process lacks"
    else:
        cpuidle = "cpuidle of CPU(s) {cpus} is read-only here"  # a read-only /sys
    if not os.path.exists(host.resume_latency(cpu)):
        pm_qos = f"CPU(s) {{cpus}} have no PM QoS resume latency ({PM_QOS_FILE})"
    else:
        pm_qos = f"their PM QoS resume latency ({PM_QOS_FILE}) is read-only here"
    return cpuidle, pm_qos
