"""A fake kernel for the fast path and the service set up with it: five shared containers
and an integer one (``pg``) that shrank them (their records lag); the pusher run until it
settles."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_core import ContainerUpdate
from cpuset_core.ports import UpdateOutcome
from cpuset_service.placement import PlacementService
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import make

DEADLINE = 30.0
"""A hang guard, never a judge of speed."""
TURNS = 20
"""Event-loop turns given to the pusher after nothing is pending, for a send it should not
make to show (its steps take turns, not time: the runtime here is always quiet)."""


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


def sent_until_settled(service: PlacementService,
                       then: Callable[[], object] = lambda: None) -> list[str]:
    """Run the pusher (the runtime always quiet), call ``then``, wait until nothing is left to
    go out by itself (and a few turns more); what it sent, as ``id=cpus``. No clock: a slow
    machine only makes it wait longer."""
    sent: list[str] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        sent.extend(f"{u.container_id}={u.cpus}" for u in batch)

    async def scenario() -> None:
        task = asyncio.create_task(service.pusher.run(send))
        try:
            await asyncio.sleep(0)  # the pusher waits for work
            then()
            async with asyncio.timeout(DEADLINE):
                while service.pusher.pending():
                    await asyncio.sleep(0.001)
            for _ in range(TURNS):
                await asyncio.sleep(0)
        finally:
            task.cancel()

    asyncio.run(scenario())
    return sent
