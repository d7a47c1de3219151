"""The NRI handler: engine decisions in, NRI answers out (no socket involved): subscription and
configuration, creating shared, integer and pinned containers, rejections, updates and resizes,
stop and remove, synchronize and disconnect.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from cpuset_adapters.nri.handler import EVENTS
from cpuset_adapters.nri.handler_port import Event, HandlerError, RuntimeInfo
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import ContainerUpdate, CPUSet, RuntimeState, StartReport
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import TOPOLOGY, cpus_of, make, resources


def sent_cpus(updates: Sequence[ContainerUpdate]) -> dict[str, str]:
    return {u.container_id: u.cpus.format() for u in updates}


def test_subscribes_to_exactly_the_container_and_pod_events_it_uses() -> None:
    handler, _, _ = make()
    assert handler.subscribed_events() == EVENTS
    mask = sum(e.bit for e in EVENTS)
    # create, start, update, post-update (the quota lifted again: issue 44), stop and remove
    # container; stop and remove pod sandbox
    assert mask == 0x8 | 0x20 | 0x80 | 0x100 | 0x200 | 0x400 | 0x2 | 0x4
    assert Event.VALIDATE_CONTAINER_ADJUSTMENT not in EVENTS


@pytest.mark.parametrize(("nri_version", "post_start"), [
    ("", False), ("v0.12.0", False), ("v0.12.1", True), ("v0.12.2", True)])
def test_where_it_calls_update_containers_itself_it_also_hears_when_a_start_has_gone_by(
        nri_version: str, post_start: bool) -> None:
    """Its records wait until PostStartContainer (issue 45); nowhere else does it listen."""
    handler, _, _ = make()
    handler.on_configure(RuntimeInfo(nri_version=nri_version))
    expected = EVENTS | {Event.POST_START_CONTAINER} if post_start else EVENTS
    assert handler.subscribed_events() == expected


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


def test_a_start_ends_the_wait_and_a_start_after_the_cpus_went_back_is_refused() -> None:
    handler, service, _ = make()
    db = pod("db")
    pg, late = container("pg", db, cpus=2), container("late", db, cpus=2)
    handler.on_create_container(db, pg)
    handler.on_create_container(db, late)
    handler.on_start_container(db, pg)
    assert set(service.starts.waiting()) == {late.id}
    service.starts.reported({late.id: StartReport(state=RuntimeState.CREATED, age=600)})
    with pytest.raises(HandlerError, match=r"^nri-cpuset: ns/db/late: start refused: created "
                                           r"600 s ago and not started within the 120 s grace"):
        handler.on_start_container(db, late)


def test_synchronize_places_created_containers_afresh_after_those_that_run() -> None:
    handler, service, _ = make()
    one, two = pod("one"), pod("two")
    # "waiter" was given CPUs 4-5 at its creation and never ran; "runner" runs there since.
    waiter = container("waiter", one, cpus=2, cpuset="4-5")
    waiter.state = pb.CONTAINER_CREATED
    runner = container("runner", two, cpus=2, cpuset="4-5")
    runner.state = pb.CONTAINER_RUNNING
    updates = handler.on_synchronize([one, two], [waiter, runner])
    assert service.ledger.entries[runner.id].cpus == CPUSet.parse("4-5")
    assert not service.ledger.entries[waiter.id].cpus & CPUSet.parse("4-5")
    assert set(cpus_of(updates)) == {waiter.id}  # its record is corrected, for its start
    assert set(service.starts.waiting()) == {waiter.id}
