"""The disk writer's interrupts: which IRQs the device under its directory raises, and their
affinity set to the probe's CPU for the run, so that without quiet CPUs they can land there.

The kernel delivers an IRQ whose affinity holds several CPUs on one of them (x86: the one with
the fewest vectors; ``effective_affinity_list``). The smoke run's disk IRQ was delivered on
CPU 1 while the plugin gave the probe CPU 0: its interrupts never reached the probe, and a
request taking them off its CPU could show nothing. Steering them to the probe's CPU is what a
node whose device interrupts share the exclusive CPU looks like; the quiet cases then move
them off (the plugin's journal keeps the steered value as the original, put back after each
case; the bench's own snapshot puts back the machine's at the end)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SYS = Path("/sys")
PROC_IRQ = Path("/proc/irq")


def device_dir(path: Path, sys_root: Path = SYS) -> Path | None:
    """The sysfs directory of the block device holding ``path`` (``None``: not a block
    device's, e.g. a tmpfs or an overlay)."""
    dev = os.stat(path).st_dev
    link = sys_root / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}"
    return link.resolve() if link.exists() else None


def irqs_of(block: Path, stop: Path = SYS) -> list[int]:
    """The IRQs of the first device at or above ``block`` in sysfs that has any: its MSI
    vectors (``msi_irqs/``), else its legacy ``irq``. Empty when none has (a virtual
    device)."""
    for found in (block, *block.parents):
        if found in (stop, found.parent):
            break
        msi = found / "msi_irqs"
        if msi.is_dir():
            return sorted(int(entry.name) for entry in msi.iterdir() if entry.name.isdigit())
        legacy = found / "irq"
        if legacy.is_file() and (number := legacy.read_text().strip()).isdigit() \
                and int(number) > 0:
            return [int(number)]
    return []


@dataclass(frozen=True, slots=True, kw_only=True)
class Steered:
    """One IRQ steered: its number, its affinity and where it was delivered, before and
    after."""

    irq: int
    before: str
    delivered_before: str
    after: str
    delivered_after: str

    def describe(self) -> str:
        return (f"IRQ {self.irq}: affinity {self.before} (delivered on "
                f"{self.delivered_before}) -> {self.after} (delivered on "
                f"{self.delivered_after})")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return "?"


def steer(irqs: list[int], cpus: str, proc_irq: Path = PROC_IRQ) -> tuple[list[Steered],
                                                                         list[str]]:
    """Each of ``irqs`` given the affinity ``cpus`` (a CPU list); what was steered, and the
    IRQs that refused (kernel-managed vectors refuse with EIO) or are gone, said why."""
    steered, refused = [], []
    for irq in irqs:
        affinity = proc_irq / str(irq) / "smp_affinity_list"
        effective = proc_irq / str(irq) / "effective_affinity_list"
        before, delivered = _read(affinity), _read(effective)
        try:
            affinity.write_text(cpus)
        except OSError as exc:
            refused.append(f"IRQ {irq}: {exc.strerror or exc}")
            continue
        steered.append(Steered(irq=irq, before=before, delivered_before=delivered,
                               after=_read(affinity), delivered_after=_read(effective)))
    return steered, refused
