"""The NRI handler: engine decisions in, NRI answers out (no socket involved)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from cpuset_adapters.nri import translate
from cpuset_adapters.nri.handler import EVENTS, CpusetNriHandler
from cpuset_adapters.nri.handler_port import Event, HandlerError, RuntimeInfo
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import ContainerUpdate, CPUSet, CpusetEngine
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.pusher import UpdatePusher
from tests.builders.nri import container, pod

TOPOLOGY = build_topology(DUAL_SOCKET_HT)  # 16 CPUs, n and n+8 siblings, nodes 0-3,8-11 / rest


def make() -> tuple[CpusetNriHandler, PlacementService, UpdatePusher]:
    """The handler on a fresh service; the service, and its background pusher."""
    service = PlacementService(CpusetEngine(TOPOLOGY))
    return CpusetNriHandler(service), service, service.pusher


def cpus_of(updates: Sequence[pb.ContainerUpdate]) -> dict[str, str]:
    return {u.container_id: u.linux.resources.cpu.cpus for u in updates}


def sent_cpus(updates: Sequence[ContainerUpdate]) -> dict[str, str]:
    return {u.container_id: u.cpus.format() for u in updates}


def test_subscribes_to_exactly_the_container_and_pod_events_it_uses() -> None:
    handler, _, _ = make()
    assert handler.subscribed_events() == EVENTS
    mask = sum(e.bit for e in EVENTS)
    # create, update, stop and remove container; stop and remove pod sandbox
    assert mask == 0x8 | 0x80 | 0x200 | 0x400 | 0x2 | 0x4
    assert Event.VALIDATE_CONTAINER_ADJUSTMENT not in EVENTS


def test_configure_is_remembered() -> None:
    handler, _, _ = make()
    info = RuntimeInfo(runtime_name="containerd", runtime_version="1.7.24")
    handler.on_configure(info)
    assert handler.runtime == info


def test_shared_container_gets_the_pool_and_keeps_its_memory_nodes() -> None:
    handler, _, _ = make()
    web = pod("web", qos="burstable")
    adjustment, updates = handler.on_create_container(web, container("app", web))
    assert adjustment is not None
    assert adjustment.linux.resources.cpu.cpus == "0-15"
    assert adjustment.linux.resources.cpu.mems == ""
    assert list(updates) == []


def test_integer_container_gets_whole_cores_and_shrinks_running_shared_ones() -> None:
    handler, _, _ = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    adjustment, updates = handler.on_create_container(db, container("pg", db, cpus=2))
    assert adjustment is not None
    assert adjustment.linux.resources.cpu.cpus == "0,8"
    assert cpus_of(updates) == {"id-app-0123456789": "1-7,9-15"}


def test_pinned_container_gets_its_cpus_and_mems_and_moves_the_integer_one_first() -> None:
    handler, _, _ = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    handler.on_create_container(db, container("pg", db, cpus=2))
    io = pod("io", qos="burstable", pins="0")
    adjustment, updates = handler.on_create_container(io, container("io", io))
    assert adjustment is not None
    assert (adjustment.linux.resources.cpu.cpus, adjustment.linux.resources.cpu.mems) == ("0",
                                                                                          "0")
    ids = [u.container_id for u in updates]
    assert ids == ["id-pg-0123456789", "id-app-0123456789"]  # each container once, move first
    moved = CPUSet.parse(updates[0].linux.resources.cpu.cpus)
    assert 0 not in moved
    assert len(moved) == 2


def test_rejection_fails_the_creation_with_the_reason_and_changes_nothing() -> None:
    handler, engine, _ = make()
    bad = pod("bad", qos="burstable", pins="0,,1")
    ledger = engine.ledger
    with pytest.raises(HandlerError, match=r"ns/bad/io: annotation weka.io/cores-ids='0,,1'"):
        handler.on_create_container(bad, container("io", bad))
    assert engine.ledger is ledger


def test_update_container_reasserts_the_cpuset_the_kubelet_would_replace() -> None:
    handler, _, _ = make()
    db = pod("db")
    ctr = container("pg", db, cpus=2)
    handler.on_create_container(db, ctr)
    updates = handler.on_update_container(db, ctr, pb.LinuxResources())
    assert cpus_of(updates) == {ctr.id: "0,8"}
    # A container the plugin does not hold (stopped, so released; or never seen) is not
    # (re)admitted by a resize: that would reserve CPUs for a container that may be dead.
    assert handler.on_update_container(db, container("unknown", db), pb.LinuxResources()) == []
    handler.on_stop_container(db, ctr)
    assert handler.on_update_container(db, ctr, resources(4)) == []


def resources(cpus: float) -> pb.LinuxResources:
    r = pb.LinuxResources()
    r.cpu.quota.value = int(cpus * 100_000)
    r.cpu.period.value = 100_000
    r.cpu.shares.value = int(cpus * 1024)
    return r


def test_resize_grows_an_integer_container_next_to_its_cpus_and_shrinks_the_pool() -> None:
    handler, _, _ = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    updates = handler.on_update_container(db, pg, resources(4))
    assert [u.container_id for u in updates][-1] == pg.id  # its own update goes last
    grown = CPUSet.parse(updates[-1].linux.resources.cpu.cpus)
    assert grown >= CPUSet.parse("0,8")
    assert len(grown) == 4
    assert grown <= TOPOLOGY.cpus_of_numa(0)
    assert cpus_of(updates)["id-app-0123456789"] == (TOPOLOGY.online - grown).format()


def test_resize_that_cannot_fit_is_rejected_and_changes_nothing() -> None:
    handler, engine, _ = make()
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    ledger = engine.ledger
    with pytest.raises(HandlerError, match="needs 32 exclusive CPU"):
        handler.on_update_container(db, pg, resources(32))
    assert engine.ledger is ledger


def test_resize_to_a_fraction_moves_the_container_to_the_shared_pool() -> None:
    handler, engine, _ = make()
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    updates = handler.on_update_container(db, pg, resources(1.5))
    assert cpus_of(updates) == {pg.id: "0-15"}
    assert engine.ledger.exclusive == CPUSet()


def test_zero_limits_in_an_update_keep_the_current_values() -> None:
    handler, engine, _ = make()
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    updates = handler.on_update_container(db, pg, resources(0))
    assert cpus_of(updates) == {pg.id: "0,8"}
    assert engine.ledger.exclusive == CPUSet.parse("0,8")


def test_stop_releases_at_once_and_remove_after_stop_changes_nothing() -> None:
    handler, engine, pusher = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    updates = handler.on_stop_container(db, pg)
    assert cpus_of(updates) == {"id-app-0123456789": "0-15"}
    assert pg.id not in engine.ledger
    handler.on_remove_container(db, pg)
    assert pusher.pending() == frozenset()


def test_remove_without_stop_hands_the_pool_growth_to_the_pusher() -> None:
    handler, _, pusher = make()
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    handler.on_remove_container(db, pg)
    assert pusher.pending() == {"id-app-0123456789"}
    assert sent_cpus(pusher.take_batch()) == {"id-app-0123456789": "0-15"}


def test_synchronize_corrects_shared_containers_started_before_the_plugin() -> None:
    handler, engine, _ = make()
    web = pod("web", qos="burstable")
    io = pod("io", qos="burstable", pins="2-3")
    updates = handler.on_synchronize(
        [web, io], [container("app", web, cpuset=""), container("io", io, cpuset="0-15")])
    assert cpus_of(updates) == {"id-app-0123456789": "0-1,4-15", "id-io-0123456789": "2-3"}
    io_update = next(u for u in updates if u.container_id == "id-io-0123456789")
    assert io_update.linux.resources.cpu.mems == "0"
    assert engine.synchronized
    assert len(engine.ledger) == 2


def test_disconnect_forgets_pending_work() -> None:
    handler, service, pusher = make()
    pusher.mark_dirty(["x"])
    handler.on_disconnect()
    assert pusher.pending() == frozenset()
    assert not service.synchronized


# -- the pusher ------------------------------------------------------------------------------


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
        await asyncio.sleep(0.05)
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
        await asyncio.sleep(0.3)
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
        await asyncio.sleep(0.05)
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
    from cpuset_adapters.nri.session import locks_are_safe

    assert locks_are_safe(version) is safe
