"""The soak's quiet-CPU invariant, pure: nothing outside cgroups stays changed for a container
that is gone. Checked after settling (every step, and after the plugin's restarts and kill -9)
against the host's files as they were before the walk (``cpuset_lab.quiet_host.snapshot``):

* every IRQ that accepted a write before the walk has exactly the affinity the plugin's rule
  gives it for the CPUs of the running quiet containers (``quiet``): its original minus those
  CPUs, the CPUs that are not quiet when none of its own is left; its original when no quiet
  container runs, or when every online CPU is quiet (nowhere to move interrupts to);
  ``/proc/irq/default_smp_affinity`` the same, as a mask;
* every idle state's ``disable`` is ``1`` on a CPU a running quiet container holds whose
  bound is below the state's exit latency, and its original everywhere else;
* every other file is its original: governors (the walk asks for none), and each CPU's PM QoS
  resume latency (the soak's plugin runs as root with CAP_SYS_ADMIN, so it carries idle
  bounds in the states' ``disable``; the PM QoS file is a capability-less pod's way).

At the end, every pod gone, that is: the host equals the snapshot. IRQs that came or went
during the walk are nobody's change (``quiet_host.differences``' rule)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cpuset_core.cpuset import EMPTY, CPUSet

from . import quiet
from .model import INTEGER, Node

_IDLE = re.compile(r"cpu([0-9]+)/cpuidle/state[0-9]+/disable$")


@dataclass(frozen=True, slots=True)
class Wanted:
    """What the running quiet containers ask: the CPUs interrupts must leave, and per CPU the
    lowest idle bound asked (µs)."""

    irq_cpus: CPUSet = EMPTY
    idle_bounds: Mapping[int, int] = field(default_factory=dict)


def wanted(node: Node, cpus_of: Mapping[str, CPUSet]) -> Wanted:
    """What ``node``'s running integer containers ask of the CPUs they run on (``cpus_of``:
    container id → its CPUs in the kernel), from their pods' annotations (``quiet``)."""
    irq_cpus, bounds = EMPTY, dict[int, int]()
    for container in node.running():
        pod = node.pods[container.pod]
        if container.kind != INTEGER or container.cid not in cpus_of or not pod.requests:
            continue
        if quiet.refusal(pod.requests) is not None:
            continue  # never admitted with these (a refusal is judged elsewhere)
        asks, cpus = quiet.asked(pod.requests), cpus_of[container.cid]
        if asks.irqs:
            irq_cpus |= cpus
        if asks.idle_bound is not None:
            for cpu in cpus:
                bounds[cpu] = min(bounds.get(cpu, asks.idle_bound), asks.idle_bound)
    return Wanted(irq_cpus=irq_cpus, idle_bounds=bounds)


def parse_mask(text: str) -> CPUSet:
    """``/proc/irq/default_smp_affinity``'s hex mask (32-bit words, comma-separated)."""
    return CPUSet.from_mask(int(text.strip().replace(",", "") or "0", 16))


def _affinity(original: CPUSet, quiet_cpus: CPUSet, online: CPUSet) -> CPUSet:
    housekeeping = online - quiet_cpus
    if not quiet_cpus or not housekeeping or not original & quiet_cpus:
        return original
    return (original - quiet_cpus) or housekeeping


def expected(before: Mapping[Path, str], *, accepting: Collection[Path],
             latency: Mapping[Path, int], online: CPUSet, want: Wanted) -> dict[Path, str]:
    """What each file of ``before`` must hold now (affinities as CPU lists, the default one as
    a hex mask; compared as sets by :func:`violations`)."""
    quiet_cpus = want.irq_cpus & online
    found: dict[Path, str] = {}
    for path, value in before.items():
        if path.name == "smp_affinity_list" and path in accepting:
            found[path] = _affinity(CPUSet.parse(value), quiet_cpus, online).format()
        elif path.name == "default_smp_affinity":
            found[path] = f"{_affinity(parse_mask(value), quiet_cpus, online).mask:x}"
        elif (idle := _IDLE.search(path.as_posix())) is not None and path in latency:
            bound = want.idle_bounds.get(int(idle.group(1)))
            found[path] = "1" if bound is not None and latency[path] > bound else value
        else:
            found[path] = value
    return found


def _same(path: Path, now: str, wanted_value: str) -> bool:
    if path.name == "smp_affinity_list":
        return CPUSet.parse(now, allow_empty=True) == CPUSet.parse(wanted_value,
                                                                   allow_empty=True)
    if path.name == "default_smp_affinity":
        return parse_mask(now) == parse_mask(wanted_value)
    return now.strip() == wanted_value.strip()


def violations(before: Mapping[Path, str], now: Mapping[Path, str], *,
               accepting: Collection[Path], latency: Mapping[Path, int], online: CPUSet,
               want: Wanted) -> list[str]:
    """Each file of ``before`` (still there ``now``) that does not hold what ``want`` makes of
    it, as a sentence with the file, what it holds, what it should and why."""
    why = (f"running quiet containers ask interrupts off {want.irq_cpus or 'no CPU'}, idle "
           f"bounds {dict(sorted(want.idle_bounds.items())) or 'none'}")
    should = expected(before, accepting=accepting, latency=latency, online=online, want=want)
    return [f"{path} is {now[path]!r}, expected {value!r} (before the walk {before[path]!r}; "
            f"{why})" for path, value in should.items()
            if path in now and not _same(path, now[path], value)]

