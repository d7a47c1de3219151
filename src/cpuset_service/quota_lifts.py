"""Which containers run without CFS quota in the kernel, and lifting it there (issue 44,
decision 54).

The runtime's record keeps the kubelet's quota (the kubelet reports a container's CPU limit
from it), so every runtime update of the container — its creation, the kubelet's resize, a
record riding on an answer — puts the quota back into the kernel. The plugin takes it out
again: when the container starts and after the kubelet's update (PostUpdateContainer), and the
verifier repairs what any other update put back (``cpuset_core.verify``, cause ``quota``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from cpuset_core import CpusetEngine
from cpuset_core.model import Placement
from cpuset_core.quota import UNLIMITED, ExclusiveQuota, cpu_quota

_log = logging.getLogger("nri_cpuset.placement")


class QuotaWriter(Protocol):
    """Takes a container's CFS quota out of the kernel (an adapter: the cgroup's files)."""

    def lift(self, cgroups_path: str) -> str:
        """Write "no quota" into the cgroup at ``cgroups_path``; return ``""`` when written,
        else why not (never raises)."""
        ...


class QuotaLifts:
    """The containers whose quota the plugin lifts, and the writer that lifts it (``None``
    until the composition root sets one: nothing is written)."""

    def __init__(self, paths: Callable[[str], str | None]) -> None:
        self._paths = paths
        self._ids: set[str] = set()
        self.writer: QuotaWriter | None = None

    def decide(self, container_id: str, placement: Placement, policy: ExclusiveQuota
               ) -> int | None:
        """The quota the container's kernel cgroup gets at ``placement`` under ``policy``
        (``cpu_quota``), remembered: lifted ones are kept lifted from now on."""
        quota = cpu_quota(placement, policy)
        if quota == UNLIMITED:
            self._ids.add(container_id)
        else:
            self._ids.discard(container_id)
        return quota

    def adopt(self, engine: CpusetEngine, policy: ExclusiveQuota) -> None:
        """After a rebuild: every container the ledger places on exclusive CPUs alone is
        lifted under ``policy`` (what a new admission would get); none under the kubelet's."""
        pool, reserved = engine.shared_pool(), engine.reserved_pool()
        self._ids = {cid for cid in engine.ledger.entries
                     if (placement := engine.ledger.placement(cid, pool, reserved)) is not None
                     and cpu_quota(placement, policy) == UNLIMITED}

    def forget(self, container_id: str) -> None:
        self._ids.discard(container_id)

    def unthrottled(self) -> frozenset[str]:
        """The containers that must run without CFS quota in the kernel."""
        return frozenset(self._ids)

    def lift(self, container_id: str, cgroups_path: str | None = None) -> bool:
        """Lift the container's quota in the kernel if it is one of :meth:`unthrottled`;
        return whether it was written. A failure is logged at debug level: the verifier
        finds the quota and tries again."""
        path = cgroups_path or self._paths(container_id)
        if container_id not in self._ids or self.writer is None or not path:
            return False
        problem = self.writer.lift(path)
        if problem:
            _log.debug("quota not lifted", extra={"id": container_id[:12], "problem": problem})
        return not problem
