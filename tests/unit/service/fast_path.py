"""A fake kernel for the fast path and the service set up with it: five shared containers
and an integer one (``pg``) that shrank them (their records lag)."""

from __future__ import annotations

from collections.abc import Sequence

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_core import ContainerUpdate
from cpuset_core.ports import UpdateOutcome
from cpuset_service.placement import PlacementService
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import make


class FakeKernel:
    """Cgroups in a dict; refuses the containers in ``refuse``; remembers each call."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.cpus: dict[str, str] = {}
        self.calls: list[list[str]] = []
        self.refuse = refuse

    def apply(self, updates: Sequence[ContainerUpdate]) -> UpdateOutcome:
        self.calls.append([u.container_id for u in updates])
        failed = tuple(u.container_id for u in updates if u.container_id in self.refuse)
        for u in updates:
            if u.container_id not in self.refuse:
                self.cpus[u.container_id] = u.cpus.format()
        return UpdateOutcome(failed=failed, detail="refused" if failed else "")


def with_kernel(kernel: FakeKernel) -> tuple[CpusetNriHandler, PlacementService]:
    handler, service, _ = make()
    service.pusher.kernel.updater = kernel
    return handler, service


def five_shared_and_pg(kernel: FakeKernel) -> tuple[CpusetNriHandler, PlacementService]:
    handler, service = with_kernel(kernel)
    for n in range(5):
        web = pod(f"web{n}", qos="burstable")
        handler.on_create_container(web, container(f"app{n}", web))
    db = pod("db")
    handler.on_create_container(db, container("pg", db, cpus=2))
    return handler, service


