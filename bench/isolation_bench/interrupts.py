"""Device interrupts per CPU, read from ``/proc/interrupts``: how many the probe's CPUs took
while it ran (what a quiet-CPU request, issue 43 part 2, is to take off them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

PROC_INTERRUPTS = Path("/proc/interrupts")


def device_interrupts(text: str) -> dict[int, int]:
    """Per CPU, the interrupts of numbered IRQ lines (devices) in ``/proc/interrupts``'
    ``text``; the named lines (LOC, RES, CAL, ...: timers and IPIs) are not devices' and are
    left out. Raises ``ValueError`` when the header names no CPU."""
    lines = text.splitlines()
    cpus = [int(word[3:]) for word in (lines[0].split() if lines else ())
            if word.startswith("CPU") and word[3:].isdigit()]
    if not cpus:
        raise ValueError("/proc/interrupts names no CPU in its header")
    totals = dict.fromkeys(cpus, 0)
    for line in lines[1:]:
        label, _, rest = line.partition(":")
        if not label.strip().isdigit():
            continue
        counts = rest.split()[:len(cpus)]
        # A line with fewer counts than CPUs (some architectures' chained IRQs) counts what
        # it has; the words after the counts are the chip and the device's name.
        for cpu, word in zip(cpus, counts, strict=False):
            if not word.isdigit():
                break
            totals[cpu] += int(word)
    return totals


def taken(before: Mapping[int, int], after: Mapping[int, int], cpus: Iterable[int]) -> int:
    """Device interrupts ``cpus`` took between two readings (CPUs absent from either count
    as none)."""
    return sum(after.get(cpu, 0) - before.get(cpu, 0) for cpu in cpus)


def read() -> dict[int, int]:
    """This machine's device interrupts per CPU, now."""
    return device_interrupts(PROC_INTERRUPTS.read_text())
