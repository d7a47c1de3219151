"""The daemon's verifier loop: a pass shortly after a burst of decisions settles, and
periodically; none before the runtime synchronized; a failing read does not stop it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Coroutine, Mapping

from cpuset_cli.daemon.verify_loop import VerifierLoop
from cpuset_core import CpusetEngine
from cpuset_core.verify import Observed
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.verifier import Verifier
from tests.builders.facts import container, pod


def loop_with(reads: list[Mapping[str, str]], *, period: float,
              fail: bool = False) -> tuple[PlacementService, VerifierLoop]:
    service = PlacementService(CpusetEngine(build_topology(DUAL_SOCKET_HT)))

    def read(paths: Mapping[str, str], quotas: Collection[str]) -> dict[str, Observed]:
        reads.append(dict(paths))
        assert not quotas  # nobody here runs unthrottled: no quota file is worth reading
        if fail:
            raise OSError("cgroupfs went away")
        return {}

    return service, VerifierLoop(service, Verifier(service), read, period=period, settle=0.05)


async def passes(reads: list[Mapping[str, str]], count: int) -> None:
    """Until ``count`` passes have read (bounded by :func:`run`'s timeout, not a timing check)."""
    while len(reads) < count:
        await asyncio.sleep(0.01)


def run(scenario: Callable[[], Coroutine[object, object, None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 30))


def run_until_passes(loop: VerifierLoop, reads: list[Mapping[str, str]], count: int) -> None:
    async def scenario() -> None:
        task = asyncio.create_task(loop.run())
        await passes(reads, count)
        task.cancel()

    run(scenario)


def test_a_burst_is_verified_once_it_settles_and_not_before_the_runtime_synchronized() -> None:
    reads: list[Mapping[str, str]] = []
    service, loop = loop_with(reads, period=3600)

    async def scenario() -> None:
        task = asyncio.create_task(loop.run())
        web = pod("web", qos="burstable")
        service.admit(web, container("c-web", web))  # not synchronized yet: no pass
        await asyncio.sleep(0.3)
        assert reads == []
        service.synchronize([web], [container("c-web", web)], source="synchronize")
        await passes(reads, 1)
        task.cancel()

    run(scenario)
    assert len(reads) == 1


def test_a_quiet_node_is_verified_every_period_and_a_failing_read_is_survived() -> None:
    reads: list[Mapping[str, str]] = []
    service, loop = loop_with(reads, period=0.1, fail=True)
    service.synchronize([], [], source="synchronize")
    run_until_passes(loop, reads, 3)
    assert len(reads) >= 3


def test_a_due_pass_waits_while_the_runtime_is_at_work_and_runs_once_it_is_quiet() -> None:
    reads: list[Mapping[str, str]] = []
    service, loop = loop_with(reads, period=3600)
    busy = True
    loop.runtime_quiet = lambda: 0.0 if busy else 1.0

    async def scenario() -> None:
        nonlocal busy
        task = asyncio.create_task(loop.run())
        await asyncio.sleep(0.1)  # the loop has taken its first look at the ledger
        web = pod("web", qos="burstable")
        service.synchronize([web], [container("c-web", web)], source="synchronize")
        await asyncio.sleep(0.4)  # settled long since (0.05 s), but the runtime is busy
        assert reads == []
        busy = False
        await passes(reads, 1)
        task.cancel()

    run(scenario)
    assert len(reads) == 1


def test_a_runtime_that_never_goes_quiet_is_still_verified_once_a_period_has_gone_by() -> None:
    reads: list[Mapping[str, str]] = []
    service, loop = loop_with(reads, period=0.3)
    loop.runtime_quiet = lambda: 0.0
    service.synchronize([], [], source="synchronize")
    run_until_passes(loop, reads, 2)
    assert len(reads) >= 2
