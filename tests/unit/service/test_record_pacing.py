"""The pusher with its record pace (issue 45): where calls of its own are safe (NRI v0.12.1 or
later) the runtime's records go in them only when the pace allows, asked before every call,
and never ride on answers; what the kernel refused is not held back; where such calls could
deadlock the runtime (decision 51) nothing changes: records ride one per answer, never in a
call. No clock: the tests wait for conditions (how often the pace was asked), never for time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from cpuset_core import ContainerUpdate
from cpuset_service import pusher as pusher_module
from cpuset_service.placement import PlacementService
from tests.builders.nri import container, pod
from tests.unit.service.fast_path import FakeKernel, five_shared_and_pg

DEADLINE = 30.0
"""A hang guard, never a judge of speed."""


class Gate:
    """A pace that lets records go only while ``open``; counts how often it was asked."""

    def __init__(self) -> None:
        self.open = False
        self.asked = 0

    def may_send(self) -> bool:
        self.asked += 1
        return self.open


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(DEADLINE):
        while not condition():
            await asyncio.sleep(0.001)


def run_pusher(service: PlacementService,
               scenario: Callable[[list[list[str]]], Coroutine[Any, Any, None]],
               ) -> list[list[str]]:
    """Run the pusher (the runtime always quiet) beside ``scenario(sent)``; what it sent."""
    sent: list[list[str]] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        sent.append([u.container_id for u in batch])

    async def main() -> None:
        task = asyncio.create_task(service.pusher.run(send))
        try:
            await scenario(sent)
        finally:
            task.cancel()

    asyncio.run(main())
    return sent


def test_record_calls_wait_for_their_pace_and_go_one_container_each_once_it_allows() -> None:
    _, service = five_shared_and_pg(FakeKernel())
    pusher = service.pusher
    gate = Gate()
    pusher.pace.may_send = gate.may_send  # type: ignore[method-assign]
    assert len(pusher.record_pending()) == 5

    async def scenario(sent: list[list[str]]) -> None:
        await until(lambda: gate.asked >= 3)  # a creation or a start under way: held
        assert sent == []
        gate.open = True
        await until(lambda: not pusher.record_pending())

    sent = run_pusher(service, scenario)
    assert len(sent) == 5
    assert all(len(batch) == pusher_module.RECORD_BATCH == 1 for batch in sent)


def test_the_pace_is_asked_again_before_every_record_call() -> None:
    _, service = five_shared_and_pg(FakeKernel())
    pusher = service.pusher
    gate = Gate()
    gate.open = True
    pusher.pace.may_send = gate.may_send  # type: ignore[method-assign]

    async def scenario(sent: list[list[str]]) -> None:
        await until(lambda: len(sent) >= 1)
        gate.open = False  # a lifecycle event arrived during the catch-up
        held_at, asked = len(sent), gate.asked
        await until(lambda: gate.asked >= asked + 3)
        assert len(sent) == held_at
        gate.open = True
        await until(lambda: not pusher.record_pending())

    assert len(run_pusher(service, scenario)) == 5


def test_what_the_kernel_refused_is_not_held_back_by_the_record_pace() -> None:
    refused = "id-app0-0123456789"
    handler, service = five_shared_and_pg(FakeKernel(refuse=frozenset({refused})))
    gate = Gate()
    service.pusher.pace.may_send = gate.may_send  # type: ignore[method-assign]
    db = pod("db")

    async def scenario(sent: list[list[str]]) -> None:
        await until(lambda: gate.asked >= 1)
        handler.on_remove_container(db, container("pg", db, cpus=2))
        await until(lambda: [refused] in sent)

    sent = run_pusher(service, scenario)
    assert [refused] in sent


def test_where_calls_of_its_own_are_safe_no_record_rides_on_an_answer() -> None:
    handler, service = five_shared_and_pg(FakeKernel())
    service.pusher.may_send_records = lambda: True  # NRI v0.12.1 or later
    late = pod("late", qos="burstable")
    _, updates = handler.on_create_container(late, container("late", late))
    assert list(updates) == []  # the creation's answer carries no runc update of a record
    assert len(service.pusher.record_pending()) == 5


def test_where_they_could_deadlock_records_still_ride_one_per_answer_and_never_in_a_call(
        ) -> None:
    """Decision 51 unchanged: the pace never lets a record out where calls are unsafe."""
    handler, service = five_shared_and_pg(FakeKernel())
    pusher = service.pusher
    pusher.may_send_records = lambda: False
    gate = Gate()
    gate.open = True
    pusher.pace.may_send = gate.may_send  # type: ignore[method-assign]
    late = pod("late", qos="burstable")
    handler.on_create_container(late, container("late", late))
    updates = handler.on_stop_container(late, container("late", late))  # not a creation's
    assert len(updates) == pusher_module.RECORD_PER_ANSWER == 1

    async def scenario(sent: list[list[str]]) -> None:
        pusher.record_lags(pusher.record_pending())  # wakes the pusher
        await asyncio.sleep(0)
        await until(lambda: not pusher._wake.is_set())
        assert sent == []

    assert run_pusher(service, scenario) == []
    assert gate.asked == 0
    assert len(pusher.record_pending()) == 4
