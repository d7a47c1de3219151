"""Where each container's cgroup is, as its runtime said (for the verifier's reads)."""

from __future__ import annotations

from cpuset_core import ContainerFacts, Ledger


class CgroupPaths:
    """Container id → cgroup path (OCI ``linux.cgroupsPath`` form)."""

    def __init__(self) -> None:
        self._paths: dict[str, str] = {}

    def remember(self, container: ContainerFacts) -> None:
        if container.cgroups_path:
            self._paths[container.id] = container.cgroups_path

    def get(self, container_id: str) -> str | None:
        return self._paths.get(container_id)

    def forget(self, container_id: str) -> None:
        self._paths.pop(container_id, None)

    def of(self, ledger: Ledger) -> dict[str, str]:
        """The paths of the containers ``ledger`` holds."""
        return {cid: path for cid, path in self._paths.items() if cid in ledger.entries}
