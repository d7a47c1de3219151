"""The ports: what the core needs from the outside world, and what drives it.

Each is a small ``typing.Protocol`` named by its role. Adapters implement them; the shared
contract suite in ``tests/contract/`` checks every implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from cpuset_core.model import ContainerFacts, ContainerUpdate, PodFacts
from cpuset_core.plan import Plan
from cpuset_core.topology import Topology


class TopologySource(Protocol):
    """Where the machine's topology comes from (sysfs, a file, a test)."""

    def read_topology(self) -> Topology:
        """Return the current topology; raises ``TopologyError`` when it cannot be read."""
        ...


@dataclass(frozen=True, slots=True)
class UpdateOutcome:
    """What applying a batch of updates gave: the ids that failed (empty when all applied).

    An updater that cannot tell which updates of a failed batch failed lists them all.
    """

    failed: tuple[str, ...] = ()
    detail: str = ""

    @property
    def ok(self) -> bool:
        return not self.failed


class ContainerUpdater(Protocol):
    """Applies live cpuset changes to running containers."""

    def apply(self, updates: Sequence[ContainerUpdate]) -> UpdateOutcome:
        """Apply every update in ``updates`` as one batch and report which failed.

        Containers the runtime no longer knows count as applied (there is nothing to pin).
        """
        ...


class RuntimeEvents(Protocol):
    """What drives the engine: one call per runtime event, each returning an uncommitted plan
    that the caller commits once the runtime has accepted it."""

    def plan_synchronize(self, pods: Iterable[PodFacts], containers: Iterable[ContainerFacts],
                         *, keep_unlisted: bool = False) -> Plan: ...

    def plan_create(self, pod: PodFacts, container: ContainerFacts) -> Plan: ...

    def plan_resize(self, pod: PodFacts, container: ContainerFacts) -> Plan: ...

    def plan_release(self, container_id: str) -> Plan: ...

    def commit(self, plan: Plan) -> None: ...
