"""Quiet CPUs (issue 43): which CPUs must be quiet, for what, and which containers hold each,
as a function of the ledger's live entries, so that a CPU stays quiet exactly while a container
that asked (:mod:`cpuset_core.quiet_request`) holds it, and no longer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from cpuset_core.cpuset import CPUSet
from cpuset_core.ledger import Entry
from cpuset_core.model import Kind
from cpuset_core.quiet_request import Quiet


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuQuiet:
    """What one CPU must be, and the containers that hold it so (by container id)."""

    irqs: tuple[str, ...] = ()
    idle_limit: int | None = None
    """The lowest bound its holders asked; ``None``: untouched."""
    idle: tuple[str, ...] = ()
    governor: str | None = None
    """The governor of the first holder by container id that asked one."""
    governors: tuple[str, ...] = ()


_NO_CPUS: Mapping[int, CpuQuiet] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class QuietState:
    """Every CPU that must be quiet (absent: as the node had it)."""

    cpus: Mapping[int, CpuQuiet] = field(default_factory=lambda: _NO_CPUS)

    @property
    def irq_cpus(self) -> CPUSet:
        """The CPUs interrupts must leave."""
        return CPUSet(cpu for cpu, wanted in self.cpus.items() if wanted.irqs)

    def idle_limits(self) -> dict[int, int]:
        return {cpu: w.idle_limit for cpu, w in self.cpus.items() if w.idle_limit is not None}

    def governors(self) -> dict[int, str]:
        return {cpu: w.governor for cpu, w in self.cpus.items() if w.governor is not None}


def quiet_state(entries: Iterable[Entry]) -> QuietState:
    """What the node's CPUs must be for ``entries`` (the ledger's live containers): each CPU an
    integer or pinned entry holds, with the requests of every holder that asked. A shared
    entry (a container demoted for want of room) holds no CPU, so quiets none."""
    cpus: dict[int, CpuQuiet] = {}
    # The few that asked are sorted, not every entry: the daemon asks after each change of
    # the ledger, hundreds of entries on a dense node, right beside a container's start.
    asking = [(entry.container_id, entry.cpus, entry.quiet) for entry in entries
              if entry.quiet is not None and entry.kind is not Kind.SHARED]
    for container_id, held, quiet in sorted(asking, key=lambda asked: asked[0]):
        for cpu in held:
            cpus[cpu] = _held(cpus.get(cpu, CpuQuiet()), container_id, quiet)
    return QuietState(MappingProxyType(dict(sorted(cpus.items()))))


def _held(now: CpuQuiet, holder: str, quiet: Quiet) -> CpuQuiet:
    irqs = (*now.irqs, holder) if quiet.irqs else now.irqs
    idle, limit = now.idle, now.idle_limit
    if quiet.idle_limit is not None:
        idle = (*idle, holder)
        limit = quiet.idle_limit if limit is None else min(limit, quiet.idle_limit)
    governors, governor = now.governors, now.governor
    if quiet.governor is not None:
        governors = (*governors, holder)
        governor = governor or quiet.governor
    return CpuQuiet(irqs=irqs, idle_limit=limit, idle=idle, governor=governor,
                    governors=governors)
