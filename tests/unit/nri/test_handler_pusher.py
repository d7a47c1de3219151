"""The NRI handler's pusher and its answers: pushed placements and retries, batches overtaken or
in flight at a disconnect, the translation of absent wrappers, per-container counters, and
which runtimes take update calls during events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from cpuset_adapters.nri import translate
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import ContainerUpdate, CPUSet
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import TOPOLOGY, cpus_of, make, resources

# -- the pusher ------------------------------------------------------------------------------

DEADLINE = 30.0
"""A hang guard, never a judge of speed: the waits below end when their condition holds."""


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(DEADLINE):
        while not condition():
            await asyncio.sleep(0.001)


def test_pusher_sends_the_latest_placement_once_and_drops_gone_containers() -> None:
    handler, engine, pusher = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    sent: list[list[str]] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        sent.append([f"{u.container_id}={u.cpus}" for u in batch])

    async def scenario() -> None:
        task = asyncio.create_task(pusher.run(send))
        db = pod("db")
        pg = container("pg", db, cpus=2)
        handler.on_create_container(db, pg)
        handler.on_remove_container(db, pg)          # app should go back to 0-15...
        pusher.mark_dirty(["id-gone", "id-app-0123456789"])
        await until(lambda: not pusher.pending())
        task.cancel()

    asyncio.run(scenario())
    assert sent == [["id-app-0123456789=0-15"]]
    assert engine.placement("id-app-0123456789") is not None


def test_pusher_retries_a_failed_batch() -> None:
    handler, service, pusher = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    pusher.forget("id-app-0123456789")
    attempts: list[int] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        attempts.append(len(batch))
        if len(attempts) == 1:
            raise RuntimeError("runtime said no")

    async def scenario() -> None:
        task = asyncio.create_task(pusher.run(send))
        pusher.mark_dirty(["id-app-0123456789"])
        await until(lambda: len(attempts) == 2 and not pusher.pending())  # after its back-off
        task.cancel()

    asyncio.run(scenario())
    assert attempts == [1, 1]
    stats = service.statistics.snapshot()
    assert (stats["update_failures"], stats["update_containers_calls"]) == (1, 1)


def test_translation_reads_absent_wrappers_as_unset() -> None:
    facts = translate.container_facts(pb.Container(id="c", pod_sandbox_id="s", name="n"))
    assert (facts.cpu_quota, facts.cpu_period, facts.cpu_shares, facts.memory_limit) == (
        None, None, None, None)


def test_updates_on_responses_are_counted_per_container() -> None:
    handler, service, _ = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    handler.on_stop_container(db, pg)
    assert service.statistics.updates_on_responses("id-app-0123456789") == 2
    assert service.statistics.snapshot()["updates_on_responses"] == 2


def test_stop_after_a_failed_creation_puts_the_containers_it_moved_back_where_the_ledger_says(
        ) -> None:
    """A later plugin fails the pin's creation: containerd applied none of its moves and sends
    Stop for it. The Stop answer must move the displaced container to its ledger placement
    before the shared containers grow back onto the pin's CPUs (review finding #1)."""
    handler, _engine, _pusher = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    io = pod("io", qos="burstable", pins="0")
    pin = container("io", io)
    _, create_updates = handler.on_create_container(io, pin)
    moved_to = cpus_of(create_updates)[pg.id]
    updates = handler.on_stop_container(io, pin)
    assert next(u.container_id for u in updates) == pg.id
    assert cpus_of(updates)[pg.id] == moved_to
    assert cpus_of(updates)["id-app-0123456789"] == (TOPOLOGY.online - CPUSet.parse(moved_to)
                                                     ).format()


def test_an_update_with_an_empty_shared_pool_is_not_answered_with_empty_cpus() -> None:
    handler, _, _ = make()
    web = pod("web", qos="burstable")
    io = pod("io", qos="burstable", pins="0-15")
    app = container("app", web, cpuset="0-15")
    handler.on_synchronize([web, io], [app, container("io", io, cpuset="0-15")])
    assert handler.on_update_container(web, app, resources(0)) == []


def test_counters_forget_released_containers() -> None:
    handler, service, _pusher = make()
    web = pod("web", qos="burstable")
    app = container("app", web)
    handler.on_create_container(web, app)
    db = pod("db")
    handler.on_create_container(db, container("pg", db, cpus=2))
    assert service.statistics.updates_on_responses(app.id) == 1
    handler.on_stop_container(web, app)
    assert service.statistics.updates_on_responses(app.id) == 0


def test_a_batch_overtaken_by_a_newer_decision_is_sent_again() -> None:
    """The pusher sends S's grown pool; while that call waits on containerd's lock, an event
    shrinks the pool again and its response is applied first. Afterwards S must be re-sent
    (review finding #2)."""
    handler, _engine, pusher = make()
    web = pod("web", qos="burstable")
    app = container("app", web)
    handler.on_create_container(web, app)
    sent: list[str] = []

    async def scenario() -> None:
        release = asyncio.Event()

        async def send(batch: Sequence[ContainerUpdate]) -> None:
            sent.append(batch[0].cpus.format())
            if len(sent) == 1:
                # A newer decision lands while this send is in flight.
                db2 = pod("db2")
                handler.on_create_container(db2, container("pg2", db2, cpus=2))
                release.set()

        task = asyncio.create_task(pusher.run(send))
        pusher.force([app.id])
        await release.wait()
        await until(lambda: len(sent) == 2 and not pusher.pending())
        task.cancel()

    asyncio.run(scenario())
    assert sent == ["0-15", "1-7,9-15"]


def test_a_send_in_flight_when_the_connection_drops_is_forgotten() -> None:
    handler, _, pusher = make()
    web = pod("web", qos="burstable")
    app = container("app", web)
    handler.on_create_container(web, app)
    attempts: list[int] = []

    async def scenario() -> None:
        async def send(batch: Sequence[ContainerUpdate]) -> None:
            attempts.append(len(batch))
            handler.on_disconnect()  # the runtime goes away while this call is pending
            raise RuntimeError("connection lost")

        task = asyncio.create_task(pusher.run(send))
        pusher.force([app.id])
        await asyncio.sleep(0.3)
        task.cancel()

    asyncio.run(scenario())
    assert attempts == [1]  # not retried into the next connection
    assert pusher.pending() == frozenset()


@pytest.mark.parametrize(("version", "safe"), [
    ("", False), ("v0.6.1", False), ("v0.12.0", False), ("v0.12.1", True), ("0.13.0", True),
    ("v1.0.0-rc.1", True), ("garbage", False)])
def test_only_runtimes_with_nri_0_12_1_or_later_take_update_calls_during_events(
        version: str, safe: bool) -> None:
    from cpuset_adapters.nri.deadlock import locks_are_safe

    assert locks_are_safe(version) is safe
