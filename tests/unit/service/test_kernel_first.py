"""The kernel fast path in the service: other containers' updates written into the kernel
before the answer (in safe steps), what the kernel refuses left on the answer, the runtime's
record following in small batches, and a Synchronize that prefers the kernel's view."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import ContainerUpdate, CPUSet, Kind
from cpuset_core.verify import Observed
from cpuset_service import pusher as pusher_module
from cpuset_service.kernel_first import KernelFirst
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import cpus_of, make, resources
from tests.unit.service.fast_path import (
    DEADLINE,
    FakeKernel,
    five_shared_and_pg,
    sent_until_settled,
    with_kernel,
)

WEB = "id-app-0123456789"


def test_an_integer_container_shrinks_running_shared_ones_in_the_kernel_not_on_the_answer(
        ) -> None:
    kernel = FakeKernel()
    handler, service = with_kernel(kernel)
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    adjustment, updates = handler.on_create_container(db, container("pg", db, cpus=2))
    assert adjustment is not None
    assert adjustment.linux.resources.cpu.cpus == "0,8"  # its own stays on the answer
    assert list(updates) == []
    assert kernel.cpus == {WEB: "1-7,9-15"}
    assert service.pusher.record_pending() == {WEB}  # the runtime's record follows
    assert service.pusher.known()[WEB].format() == "1-7,9-15"  # what the kernel has


def test_without_the_fast_path_the_shrink_rides_on_the_answer_as_before() -> None:
    kernel = FakeKernel()
    handler, service = with_kernel(kernel)
    service.pusher.kernel.enabled = False
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    _, updates = handler.on_create_container(db, container("pg", db, cpus=2))
    assert cpus_of(updates) == {WEB: "1-7,9-15"}
    assert kernel.calls == []


def test_a_refused_shrink_stays_on_the_answer_and_stops_later_steps() -> None:
    kernel = FakeKernel(refuse=frozenset({WEB}))
    handler, service = with_kernel(kernel)
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    _, updates = handler.on_create_container(db, container("pg", db, cpus=2))
    assert cpus_of(updates) == {WEB: "1-7,9-15"}  # the runtime shrinks it before pg starts
    assert kernel.cpus == {}
    assert service.pusher.kernel.refused == 1
    assert service.pusher.record_pending() == frozenset()


def shared(cid: str, before: str, after: str) -> ContainerUpdate:
    """A shared container's update from ``before`` to ``after``."""
    return ContainerUpdate(container_id=cid, subject=cid, kind=Kind.SHARED,
                           cpus=CPUSet.parse(after), previous_cpus=CPUSet.parse(before))


def kernel_first_on(kernel: FakeKernel) -> KernelFirst:
    first = KernelFirst()
    first.updater = kernel
    return first


def test_a_refused_step_leaves_every_later_step_to_the_answer() -> None:
    """A shared container moved in two parts (shrink, then grow): when the shrink of another
    is refused, no grow is written, and the half-written one rides whole on the answer."""
    kernel = FakeKernel(refuse=frozenset({"b"}))
    first = kernel_first_on(kernel)

    a = shared("a", "0-7", "4-11")   # shrink to 4-7, then grow to 4-11
    b = shared("b", "0-7", "4-7")    # a pure shrink, refused
    written, left = first.apply([a, b])
    assert written == []
    assert left == [a, b]
    assert kernel.calls == [["a", "b"]]  # the grow step never ran
    assert kernel.cpus == {"a": "4-7"}


def test_a_container_split_in_a_shrink_and_a_grow_is_written_only_when_both_were_taken(
        ) -> None:
    """The grow step refused for one container: the other's grow (its second part) was taken,
    so it is written; the refused one rides on the answer."""
    kernel = FakeKernel(refuse=frozenset({"c"}))
    first = kernel_first_on(kernel)

    a = shared("a", "0-7", "4-11")   # shrink to 4-7, then grow to 4-11
    c = shared("c", "0-3", "0-7")    # a pure grow, refused
    written, left = first.apply([a, c])
    assert (written, left) == ([a], [c])
    assert kernel.calls == [["a"], ["a", "c"]]
    assert (first.written, first.refused) == (1, 1)


def test_the_pool_grows_back_in_the_kernel_at_once_and_the_record_follows_in_small_batches(
        ) -> None:
    kernel = FakeKernel()
    handler, service = with_kernel(kernel)
    pusher = service.pusher
    shared = [pod(f"web{n}", qos="burstable") for n in range(5)]
    for n, p in enumerate(shared):
        handler.on_create_container(p, container(f"app{n}", p))
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)
    sent: list[list[str]] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        sent.append([f"{u.container_id}={u.cpus}" for u in batch])

    async def scenario() -> None:
        task = asyncio.create_task(pusher.run(send))
        await asyncio.sleep(0.01)
        handler.on_remove_container(db, pg)
        await asyncio.sleep(0.01)
        assert set(kernel.cpus.values()) == {"0-15"}  # before any record went out
        while pusher.pending():
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(scenario())
    assert all(len(batch) <= pusher_module.RECORD_BATCH for batch in sent)
    last = dict(item.split("=") for batch in sent for item in batch)
    assert set(last.values()) == {"0-15"}  # a record sent while pg ran is sent again
    assert {cid: cpus.format() for cid, cpus in pusher.known().items()} == {
        f"id-app{n}-0123456789": "0-15" for n in range(5)}


def test_where_a_call_of_its_own_could_deadlock_the_runtime_records_ride_on_answers_only(
        ) -> None:
    """Decision 51: the kernel has every shrink; the runtime's record waits for answers."""
    kernel = FakeKernel()
    handler, service = five_shared_and_pg(kernel)
    pusher = service.pusher
    pusher.may_send_records = lambda: False
    assert len(kernel.cpus) == 5
    assert sent_until_settled(service) == []
    assert pusher.pending() == frozenset()  # nothing goes out by itself
    assert len(pusher.record_pending()) == 5  # but the records still lag
    late = pod("late", qos="burstable")
    _, updates = handler.on_create_container(late, container("late", late))
    assert list(updates) == []  # not on a creation's answer (a runc update before it)
    assert len(pusher.record_pending()) == 5
    updates = handler.on_stop_container(late, container("late", late))
    assert len(updates) == pusher_module.RECORD_PER_ANSWER  # they ride on other answers
    assert len(pusher.record_pending()) == 5 - pusher_module.RECORD_PER_ANSWER
    pusher.may_send_records = lambda: True  # a runtime with NRI v0.12.1 or later
    assert pusher.pending() == pusher.record_pending()


def test_a_record_is_not_lagging_once_the_kernel_is_back_where_the_record_is() -> None:
    """The pool shrinks for pg (records lag), grows back when pg leaves: every shared
    container's record, set to the whole machine at its creation, is right again."""
    kernel = FakeKernel()
    handler, service = five_shared_and_pg(kernel)
    service.pusher.may_send_records = lambda: False
    assert len(service.pusher.record_pending()) == 5
    db = pod("db")
    sent = sent_until_settled(
        service, lambda: handler.on_remove_container(db, container("pg", db, cpus=2)))
    assert sent == []
    assert set(kernel.cpus.values()) == {"0-15"}
    assert service.pusher.record_pending() == frozenset()


def test_there_what_the_kernel_refuses_still_goes_in_a_call_of_its_own() -> None:
    """Nothing else would apply it: the pool's growth the kernel would not take is sent, the
    records of what it took are not."""
    refused = "id-app0-0123456789"
    kernel = FakeKernel(refuse=frozenset({refused}))
    handler, service = five_shared_and_pg(kernel)
    service.pusher.may_send_records = lambda: False
    db = pod("db")
    sent = sent_until_settled(
        service, lambda: handler.on_remove_container(db, container("pg", db, cpus=2)))
    assert sent == [f"{refused}=0-15"]
    # The four the kernel grew back are where their records have been since their creation.
    assert service.pusher.record_pending() == frozenset()


def test_an_answer_carries_only_a_few_record_only_updates() -> None:
    kernel = FakeKernel()
    handler, service = with_kernel(kernel)
    shared = [pod(f"web{n}", qos="burstable") for n in range(6)]
    for n, p in enumerate(shared):
        handler.on_create_container(p, container(f"app{n}", p))
    db = pod("db")
    handler.on_create_container(db, container("pg", db, cpus=2))
    assert len(service.pusher.record_pending()) == 6
    service.pusher.may_send_records = lambda: False  # where they ride on answers only
    late = pod("late", qos="burstable")
    handler.on_create_container(late, container("late", late))
    updates = handler.on_stop_container(late, container("late", late))
    assert len(updates) == pusher_module.RECORD_PER_ANSWER
    assert len(service.pusher.record_pending()) == 6 - pusher_module.RECORD_PER_ANSWER


def test_no_record_rides_on_a_creation_answer_where_records_ride_on_answers_only() -> None:
    """containerd applies each update an answer carries with a runc update (13-40 ms) before it
    creates the container: an integer creation's answer carries no lagging record, however many
    lag (the kernel has them all); an update the runtime resizes a container with does."""
    kernel = FakeKernel()
    handler, service = five_shared_and_pg(kernel)
    service.pusher.may_send_records = lambda: False  # containerd 1.7 and 2.1 (decision 51)
    db2 = pod("db2")
    _, updates = handler.on_create_container(db2, container("pg2", db2, cpus=2))
    assert list(updates) == []
    assert set(kernel.cpus.values()) == {"2-7,10-15"}  # the shrinks: in the kernel
    assert len(service.pusher.record_pending()) == 5
    web = pod("web0", qos="burstable")
    resized = handler.on_update_container(web, container("app0", web), resources(0.5))
    assert len(resized) == 1 + pusher_module.RECORD_PER_ANSWER  # its own, and a record
    # app0's own update sets its record too.
    assert len(service.pusher.record_pending()) == 5 - 1 - pusher_module.RECORD_PER_ANSWER


def test_what_the_kernel_refused_still_rides_on_a_creation_answer() -> None:
    """Nothing else would apply it where calls of the plugin's own are unsafe: the growth the
    kernel refused goes on the next answer, a creation's too."""
    refused = "id-app0-0123456789"
    kernel = FakeKernel(refuse=frozenset({refused}))
    handler, service = five_shared_and_pg(kernel)
    pusher = service.pusher
    pusher.may_send_records = lambda: False
    db = pod("db")

    async def scenario() -> None:
        task = asyncio.create_task(pusher.run(_never, quiet=lambda: False))
        handler.on_remove_container(db, container("pg", db, cpus=2))
        try:
            async with asyncio.timeout(DEADLINE):  # a hang guard, not a judge of speed
                while pusher.pending() != {refused}:  # the others written, this one refused
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()

    asyncio.run(scenario())
    late = pod("late", qos="burstable")
    _, updates = handler.on_create_container(late, container("late", late))
    assert cpus_of(updates) == {refused: "0-15"}
    assert pusher.pending() == frozenset()


async def _never(_batch: Sequence[ContainerUpdate]) -> None:
    raise AssertionError("nothing is sent while the runtime is busy")


def test_a_synchronize_takes_cpusets_from_the_kernel_and_resends_a_lagging_record() -> None:
    """After a restart the runtime reports its record, which may lag what was written into
    the kernel: the integer container is rebuilt where the kernel has it, not moved back."""
    kernel_has = {"id-pg-0123456789": Observed(cpus=CPUSet.parse("2,10"))}

    def view(paths: Mapping[str, str]) -> Mapping[str, Observed]:
        return {cid: seen for cid, seen in kernel_has.items() if cid in paths}

    _, service, _ = make()
    handler = CpusetNriHandler(service, kernel_view=view)
    db = pod("db")
    pg = container("pg", db, cpus=2, cpuset="0,8")  # the record, lagging
    pg.linux.cgroups_path = "/kubepods/poddb/id-pg-0123456789"
    handler.on_synchronize([db], [pg])
    placement = service.placement("id-pg-0123456789")
    assert placement is not None
    assert placement.cpus.format() == "2,10"
    assert service.pusher.record_pending() == {"id-pg-0123456789"}


def test_growth_the_kernel_refuses_goes_through_the_runtime_in_one_batch() -> None:
    kernel = FakeKernel(refuse=frozenset({WEB}))
    handler, service = with_kernel(kernel)
    web = pod("web", qos="burstable")
    handler.on_create_container(web, container("app", web))
    db = pod("db")
    pg = container("pg", db, cpus=2)
    handler.on_create_container(db, pg)  # the shrink rode on the answer (refused)
    sent: list[list[str]] = []

    async def send(batch: Sequence[ContainerUpdate]) -> None:
        sent.append([f"{u.container_id}={u.cpus}" for u in batch])

    async def scenario() -> None:
        task = asyncio.create_task(service.pusher.run(send))
        handler.on_remove_container(db, pg)
        while service.pusher.pending():
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(scenario())
    assert sent == [[f"{WEB}=0-15"]]
    assert WEB not in kernel.cpus


def test_a_synchronize_leaves_a_container_the_runtime_never_gave_a_cpuset_as_unset() -> None:
    def view(paths: Mapping[str, str]) -> Mapping[str, Observed]:
        return dict.fromkeys(paths, Observed(cpus=CPUSet.parse("0-15")))

    _, service, _ = make()
    handler = CpusetNriHandler(service, kernel_view=view)
    io = pod("io", qos="burstable", pins="3")
    late = container("late", io)  # created while the plugin was away: no cpuset in its record
    late.linux.cgroups_path = "/kubepods/podio/id-late-0123456789"
    updates = handler.on_synchronize([io], [late])
    assert cpus_of(updates) == {"id-late-0123456789": "3"}  # corrected from "unset"
    assert service.pusher.record_pending() == frozenset()


def _shrink(cid: str, cpus: str) -> ContainerUpdate:
    return ContainerUpdate(container_id=cid, subject=f"ns/{cid}/main", kind=Kind.SHARED,
                           cpus=CPUSet.parse(cpus), previous_cpus=CPUSet.parse("0-15"))


def test_write_first_marks_what_the_kernel_took_written_and_hands_back_the_rest() -> None:
    """The one step every path of the daemon's own takes (kernel writes, a hotplug's moves,
    the CRI inventory's corrections): the runtime's record of what the kernel took follows."""
    kernel = FakeKernel(refuse=frozenset({"b"}))
    _, service = with_kernel(kernel)
    rest = service.pusher.write_first([_shrink("a", "0-3"), _shrink("b", "4-7")])
    assert [u.container_id for u in rest] == ["b"]
    assert kernel.cpus == {"a": "0-3"}
    assert service.pusher.record_pending() == {"a"}
    assert service.pusher.known()["a"].format() == "0-3"


def test_without_the_fast_path_write_first_hands_back_every_update() -> None:
    _, service, _ = make()
    updates = [_shrink("a", "0-3"), _shrink("b", "4-7")]
    assert service.pusher.write_first(updates) == updates
    assert service.pusher.record_pending() == frozenset()


def test_the_kernel_updater_is_told_when_a_container_goes_and_at_a_resync() -> None:
    """The writer keeps each container's cpuset file open: it closes it when the container
    stops (its task and cgroup go with it; an open file pins a removed cgroup), when it is
    removed (one never stopped) and every one at a resync."""
    handler, service = five_shared_and_pg(FakeKernel())
    told: list[str] = []
    service.pusher.kernel.forgotten = told.append
    service.pusher.kernel.resynced = lambda: told.append("resync")
    db = pod("db")
    handler.on_stop_container(db, container("pg", db, cpus=2))
    assert told == ["id-pg-0123456789"]
    handler.on_remove_container(db, container("pg", db, cpus=2))
    assert told == ["id-pg-0123456789", "id-pg-0123456789"]
    handler.on_disconnect()
    assert told[-1] == "resync"


def test_running_containers_are_readied_for_their_first_write_at_a_resync_and_a_start() -> None:
    """A resync readies every container that runs (not one created and never started, nor one
    stopped: no task, no cgroup to keep), after the resync closed what was kept; a start
    readies the container that starts. Only containers on the shared pool (an exclusive one
    is written only if a pin moves it), and only with the fast path active."""
    handler, service = with_kernel(FakeKernel())
    told: list[str] = []
    service.pusher.kernel.resynced = lambda: told.append("resync")
    service.pusher.kernel.readied = told.extend
    one, two = pod("one"), pod("two", qos="burstable")
    waiter = container("waiter", one, cpus=2, cpuset="4-5")
    waiter.state = pb.CONTAINER_CREATED
    runner = container("runner", two)
    runner.state = pb.CONTAINER_RUNNING
    stopped = container("stopped", two)
    stopped.state = pb.CONTAINER_STOPPED
    handler.on_synchronize([one, two], [waiter, runner, stopped])
    assert told == ["resync", runner.id]
    handler.on_start_container(one, waiter)  # integer: written only if a pin moves it
    assert told == ["resync", runner.id]
    other = container("other", two)
    handler.on_create_container(two, other)
    handler.on_start_container(two, other)
    assert told == ["resync", runner.id, other.id]
    service.pusher.kernel.enabled = False  # runtime.kernel_updates = false: nothing to ready
    late = container("late", two)
    handler.on_create_container(two, late)
    handler.on_start_container(two, late)
    assert told == ["resync", runner.id, other.id]
