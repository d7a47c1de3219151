"""Quiet CPUs applied to the node: the state the ledger wants (``cpuset_core.quiet``)
reconciled against the node and the journal of originals, every pass the same way, at start as
after each change, so nothing the plugin wrote outlives the last container that needed it.

A pass (:meth:`QuietApplier.apply`): what each file must hold now; the originals of files about
to change kept in the journal, on disk, before any write; the writes; then every journaled file
no longer wanted put back and forgotten. An idle bound goes where this process may put it
(:mod:`cpuset_adapters.quiet.idle`: the states' ``disable`` with CAP_SYS_ADMIN, the CPU's PM
QoS resume latency without). An IRQ keeps its own affinity minus the quiet CPUs (the
CPUs that are not quiet when none of its own is left); one the kernel keeps (managed or fixed)
refuses the write and is skipped, saying so.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from pathlib import Path

from cpuset_adapters.quiet import idle
from cpuset_adapters.quiet.host import (
    QuietHost,
    format_mask,
    kernel_managed,
    parse_mask,
)
from cpuset_adapters.quiet.irqbalance import JOURNAL_PREFIX, IrqbalanceTeller
from cpuset_adapters.quiet.journal import QuietJournal
from cpuset_core.cpuset import CPUSet
from cpuset_core.quiet import QuietState
from cpuset_core.quiet_request import Quiet


@dataclass(slots=True)
class QuietReport:
    """What one pass did: files written toward quiet, files put back, what was skipped and
    why, and what failed (an unmet request says so here)."""

    changed: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    idle_via: dict[int, str] = field(default_factory=dict)
    """CPU → which mechanism carries its idle bound (``cpuidle``, ``pm-qos`` or ``none``)."""


class QuietApplier:
    """Writes what quiet CPUs need through ``host``, originals first into ``journal``."""

    def __init__(self, host: QuietHost, journal: QuietJournal,
                 irqbalance: IrqbalanceTeller | None = None) -> None:
        self.host = host
        self.journal = journal
        self.irqbalance = irqbalance
        """Tells running irqbalance daemons (``None``: they are not looked for)."""
        self._managed: dict[str, int] = {}
        """IRQ affinity files the kernel refused a write to, with the error it gave: the
        kernel's, not tried again."""

    def unmet(self, quiet: Quiet, cpus: CPUSet) -> list[str]:
        """Why ``quiet`` cannot be met on ``cpus`` here (the service's admission check)."""
        return self.host.why_not(quiet, cpus)

    def apply(self, state: QuietState, online: CPUSet) -> QuietReport:
        """Make the node what ``state`` wants and put back what it no longer does. Raises
        :class:`~cpuset_adapters.quiet.journal.JournalError` when the originals cannot be kept
        (then nothing was written)."""
        report = QuietReport()
        kept = self.journal.originals
        wanted = self._wanted(state, online, report)
        fresh = [path for path in wanted if path not in kept]
        for path in fresh:
            self.journal.remember(path, self.host.read(path))
        self.journal.save()  # before the first write: a kill -9 after it can be undone
        for path, value in wanted.items():
            self._write(path, value, path in fresh, report)
        if self.irqbalance is not None:
            quiet = state.irq_cpus & online
            self.irqbalance.tell(quiet if quiet != online else CPUSet(), report)
        files = (key for key in self.journal.originals if not key.startswith(JOURNAL_PREFIX))
        for path in sorted(set(files) - set(wanted)):
            self._restore(path, self.journal.originals[path], report)
        self.journal.save()
        return report

    def _write(self, path: str, value: str, fresh: bool, report: QuietReport) -> None:
        if same(path, self.host.read(path), value):
            return
        try:
            self.host.write(path, value)
        except OSError as exc:
            if fresh:
                self.journal.forget(path)  # unchanged: nothing to put back
            if kernel_managed(exc, path) and path.endswith("smp_affinity_list"):
                self._managed[path] = exc.errno or 0
                report.skipped.append(_refused_note(path, self._managed[path]))
            else:
                report.problems.append(f"{path}: cannot write {value!r}: {exc.strerror}")
            return
        report.changed.append(path)

    def _restore(self, path: str, original: str, report: QuietReport) -> None:
        if not Path(path).exists():  # its IRQ or CPU went away: nothing left to put back
            self.journal.forget(path)
            return
        try:
            if not same(path, self.host.read(path), original):
                self.host.write(path, original)
        except OSError as exc:
            report.problems.append(f"{path}: cannot put back {original!r}: {exc.strerror}")
            return
        self.journal.forget(path)
        report.restored.append(path)

    def _wanted(self, state: QuietState, online: CPUSet,
                report: QuietReport) -> dict[str, str]:
        """What each file must hold now (files that need nothing are absent)."""
        wanted = self._irqs_wanted(state.irq_cpus & online, online, report)
        limits = state.idle_limits()
        admin = self.host.admin() if limits else False
        for cpu, limit in limits.items():
            bound = idle.wanted(self.host, cpu, limit, admin, self.journal.originals)
            report.idle_via[cpu] = bound.via
            wanted.update(bound.files)
            report.skipped += [bound.skipped] if bound.skipped else []
            report.problems += [bound.problem] if bound.problem else []
        for cpu, governor in state.governors().items():
            if governor in self.host.governors_available(cpu):
                wanted[self.host.governor(cpu)] = governor
            else:
                report.problems.append(f"governor: CPU {cpu} cannot run {governor!r}")
        return wanted

    def _irqs_wanted(self, quiet: CPUSet, online: CPUSet,
                     report: QuietReport) -> dict[str, str]:
        """Every IRQ's affinity, and the default one, without the ``quiet`` CPUs."""
        housekeeping = online - quiet
        if not quiet:
            return {}
        if not housekeeping:
            report.problems.append(f"interrupts: every online CPU ({online}) is quiet; "
                                   f"interrupts stay where they are")
            return {}
        originals = self.journal.originals
        wanted: dict[str, str] = {}
        for path in self.host.irqs():
            if path in self._managed:
                report.skipped.append(_refused_note(path, self._managed[path]))
                continue
            base = CPUSet.parse(originals.get(path) or self.host.read(path))
            if base & quiet:
                wanted[path] = ((base - quiet) or housekeeping).format()
        default = self.host.default_affinity
        if Path(default).exists():
            mask = parse_mask(originals.get(default) or self.host.read(default))
            if mask & quiet:
                wanted[default] = format_mask((mask - quiet) or housekeeping)
        return wanted


def same(path: str, current: str, value: str) -> bool:
    """Whether ``current`` already says ``value`` (CPU lists and masks compared as sets)."""
    if path.endswith("smp_affinity_list"):
        return CPUSet.parse(current, allow_empty=True) == CPUSet.parse(value, allow_empty=True)
    if path.endswith("default_smp_affinity"):
        return parse_mask(current) == parse_mask(value)
    return current.strip() == value.strip()


def _refused_note(path: str, error: int) -> str:
    # Not always a managed vector: the timer and the cascade (IRQs 0 and 2) refuse alike.
    irq = Path(path).parent.name
    why = errno.errorcode.get(error, str(error))
    return (f"IRQ {irq}: the kernel keeps its affinity (a write is refused with {why}: a "
            f"managed or fixed vector); left as it is")
