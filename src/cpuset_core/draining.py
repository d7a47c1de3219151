"""CPUs a container gave up but may still run on, until the kernel shows it left them.

A move off a new pin, a shrinking resize or a rebuild's correction reaches a running container
as a live update, and the runtime may drop it without a word (fact sheet §6.1, §6.3). Were the
CPUs it gave up handed to another integer container at once, a dropped update would leave two
exclusive owners on them. So, when the engine is asked to confirm releases, those CPUs are
*draining*: kept out of every exclusive choice (the shared pool may use them: it shares by
nature) until someone who read the container's cgroup confirms it no longer runs there
(:meth:`CpusetEngine.confirm`), or the container is gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.ledger import Ledger
from cpuset_core.model import Kind


@dataclass(frozen=True, slots=True)
class Draining:
    """Container id → the CPUs it gave up and may still run on (immutable)."""

    held: Mapping[str, CPUSet] = field(default_factory=lambda: MappingProxyType({}))

    def cpus(self, *, but: str | None = None) -> CPUSet:
        """Every draining CPU (``but`` one container's own: it may take them back)."""
        union = EMPTY
        for cid, cpus in self.held.items():
            if cid != but:
                union |= cpus
        return union

    def after(self, base: Ledger, result: Ledger) -> Draining:
        """What drains once ``result`` replaces ``base``: what each exclusive or pinned
        container gave up is added, a container's CPUs given back to it stop draining, and
        containers that are gone release theirs (a stopped container runs nowhere)."""
        held: dict[str, CPUSet] = {}
        for cid, entry in result.entries.items():
            if not _owns_alone(entry.kind, entry.with_shared) and cid not in self.held:
                continue  # nothing to add or keep: most of a dense node, skipped cheaply
            old = base.entries.get(cid)
            drained = self.held.get(cid, EMPTY)
            if (old is not None and _owns_alone(old.kind, old.with_shared)
                    and _owns_alone(entry.kind, entry.with_shared)):
                drained |= old.cpus - entry.cpus
            if _owns_alone(entry.kind, entry.with_shared):
                drained -= entry.cpus
            if drained:
                held[cid] = drained
        return Draining(MappingProxyType(held))

    def confirmed(self, container_id: str, running_on: CPUSet) -> Draining:
        """The kernel shows ``container_id`` on ``running_on``: what it left stops draining."""
        drained = self.held.get(container_id, EMPTY)
        if not drained or drained.issubset(running_on):
            return self
        held = dict(self.held)
        remaining = drained & running_on
        if remaining:
            held[container_id] = remaining
        else:
            del held[container_id]
        return Draining(MappingProxyType(held))


def _owns_alone(kind: Kind, with_shared: bool) -> bool:
    """Whether a container of ``kind`` runs on CPUs of its own alone. One on the shared pool
    (a mixed one too) may be left on a CPU it gave up only as every shared container may, by
    a dropped pool update, which the verifier repairs: tracking it would keep a CPU it gave
    to the pool, where it still runs by right, from exclusive owners for as long as it runs."""
    return kind is not Kind.SHARED and not with_shared
