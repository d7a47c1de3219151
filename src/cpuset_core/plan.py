"""A plan: what a change would do, computed without changing anything."""

from __future__ import annotations

from dataclasses import dataclass

from cpuset_core.cpuset import CPUSet
from cpuset_core.errors import AdmissionError
from cpuset_core.ledger import Ledger
from cpuset_core.model import ContainerUpdate, Placement


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The ledger a change would produce, the new container's placement (if any), and the live
    updates every other affected container needs. Nothing happens until it is committed."""

    base: Ledger
    result: Ledger
    shared_pool: CPUSet
    """The shared pool after the change."""
    container_id: str | None = None
    placement: Placement | None = None
    reason: str = ""
    """Why the new container gets this placement (its classification and the policy step)."""
    updates: tuple[ContainerUpdate, ...] = ()
    problems: tuple[AdmissionError, ...] = ()
    """Containers a synchronize could not place as they asked (reported, never raised)."""

    @property
    def changes_ledger(self) -> bool:
        return self.result is not self.base
