"""What the guest's kernel says of quiet CPUs (issue 43), read from its own files: which IRQs
accept an affinity and which are the kernel's (NVMe queue vectors refuse a write with EIO),
each IRQ's name from ``/proc/interrupts``, whether the guest has cpuidle, and whether a CPU is
quiet now. The guest is its own machine: its ``/proc/irq`` is nobody else's, so no host lock.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cpuset_core.cpuset import CPUSet
from cpuset_lab import quiet_host
from cpuset_lab.quiet_host import CPU, IRQ, Snapshot

CRIO_QUIET = {"irq-load-balancing.crio.io": "disable", "cpu-c-states.crio.io": "disable"}
"""A pod written for CRI-O's high-performance hooks, unchanged."""


def irq_names() -> dict[int, str]:
    """IRQ number -> what ``/proc/interrupts`` calls it (chip, hardware IRQ, device)."""
    names = {}
    lines = Path("/proc/interrupts").read_text().splitlines()
    cpus = len(lines[0].split())
    for line in lines[1:]:
        number, _, rest = line.partition(":")
        if number.strip().isdigit():
            names[int(number)] = " ".join(rest.split()[cpus:])
    return names


def number(path: Path) -> int:
    return int(path.parent.name)


def managed(saved: Snapshot, accepting: list[Path]) -> list[int]:
    """IRQs whose affinity refuses a write: the kernel's own (NVMe queue vectors)."""
    return sorted(number(p) for p in saved
                  if p.name == "smp_affinity_list" and p not in accepting)


def deep_idle_states(cpu: int) -> list[Path]:
    """``cpu``'s idle states past polling (state0, exit latency 0): none without cpuidle."""
    return sorted(p for p in (CPU / f"cpu{cpu}" / "cpuidle").glob("state*/disable")
                  if p.parent.name != "state0")


def cpuidle_driver() -> str:
    """The guest's cpuidle driver, or why there is none."""
    driver = CPU / "cpuidle" / "current_driver"
    return driver.read_text().strip() if driver.exists() else "none (no cpuidle)"


def default_affinity() -> CPUSet:
    return CPUSet.from_mask(int((IRQ / "default_smp_affinity").read_text().strip()
                                .replace(",", ""), 16))


def on_cpu(cpu: int, irqs: list[Path]) -> list[int]:
    """The IRQs among ``irqs`` that may be delivered to ``cpu`` now."""
    return [number(p) for p in irqs if cpu in CPUSet.parse(p.read_text().strip())]


def quiet(cpu: int, irqs: list[Path]) -> bool:
    """No IRQ of ``irqs`` and no new IRQ may go to ``cpu``, and its deep idle states are off."""
    return (not on_cpu(cpu, irqs) and cpu not in default_affinity()
            and all(p.read_text().strip() == "1" for p in deep_idle_states(cpu)))


def first_quiet(cpu: int, irqs: list[Path], since: float, patience: float) -> float:
    """Seconds (guest monotonic) from ``since`` until ``cpu`` was first seen quiet; raises
    AssertionError after ``patience`` s (the hang guard, not a verdict on the time)."""
    while not quiet(cpu, irqs):
        assert time.monotonic() - since < patience, (
            f"CPU {cpu} not quiet after {patience:.0f} s: IRQs {on_cpu(cpu, irqs)} may still "
            f"go there, default affinity {default_affinity()}")
        time.sleep(0.05)
    return time.monotonic() - since


def describe(saved: Snapshot, accepting: list[Path]) -> str:
    """The guest's quiet-CPU facts, for the results."""
    names = irq_names()
    lines = [f"cpuidle driver: {cpuidle_driver()}",
             f"idle states per CPU: "
             f"{sorted({p.parent.name for p in CPU.glob('cpu[0-9]*/cpuidle/state*')})}",
             f"cpufreq: {'yes' if any(CPU.glob('cpu[0-9]*/cpufreq')) else 'none'}",
             f"default_smp_affinity: {saved.get(IRQ / 'default_smp_affinity')}",
             "IRQs (number, affinity, accepts a write, name):"]
    lines += [f"  {number(path):>4} {saved[path]:>6} "
              f"{'yes' if path in accepting else 'no (EIO)':<9} {names.get(number(path), '?')}"
              for path in sorted((p for p in saved if p.name == "smp_affinity_list"), key=number)]
    return "\n".join(lines)


def guest_facts() -> tuple[Snapshot, list[Path]]:
    """Every quiet-CPU file with its value now, and the IRQ affinities that accept a write."""
    saved = quiet_host.snapshot()
    return saved, quiet_host.accepting(saved)


def writable() -> bool:
    return os.access(IRQ / "default_smp_affinity", os.W_OK)
