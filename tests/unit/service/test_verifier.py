"""The verifier's use case: what the kernel enforces against the ledger, repairs through the
pusher, counts, and CPUs released only once the kernel shows them left."""

from __future__ import annotations

import dataclasses

import pytest

from cpuset_core import ContainerFacts, CPUSet, CpusetEngine, InsufficientCpusError, PodFacts
from cpuset_core.verify import Observed
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.verification import MAX_ATTEMPTS
from cpuset_service.verifier import Verifier
from tests.builders.facts import container, pod

TOPOLOGY = build_topology(DUAL_SOCKET_HT)  # 16 CPUs, n and n+8 siblings
ALL_MEMS = CPUSet([0, 1])


def with_path(facts: ContainerFacts) -> ContainerFacts:
    return dataclasses.replace(facts, cgroups_path=f"/kubepods/{facts.id}")


class Kernel:
    """What the kernel enforces: set by the creations and the updates that were applied."""

    def __init__(self, service: PlacementService) -> None:
        self.service = service
        self.cpus: dict[str, CPUSet] = {}
        self.mems: dict[str, CPUSet] = {}

    def admit(self, of: PodFacts, facts: ContainerFacts, *, apply: bool = True) -> None:
        admission = self.service.admit(of, with_path(facts))
        self.service.starts.started(facts.id, facts.name)  # it starts at once, here
        self.cpus[facts.id] = admission.placement.cpus
        self.mems[facts.id] = admission.placement.mems or ALL_MEMS
        if apply:
            for update in admission.updates:
                self.cpus[update.container_id] = update.cpus

    def observed(self) -> dict[str, Observed]:
        return {cid: Observed(cpus=cpus, mems=self.mems.get(cid, ALL_MEMS))
                for cid, cpus in self.cpus.items()}

    def send_background(self) -> None:
        for update in self.service.pusher.take_batch():
            self.cpus[update.container_id] = update.cpus

    def verify(self, verifier: Verifier) -> None:
        read_from, _ = verifier.snapshot()
        verifier.verify(self.observed(), read_from=read_from)


def rig(*, confirm: bool = True) -> tuple[Kernel, Verifier]:
    service = PlacementService(CpusetEngine(TOPOLOGY, confirm_releases=confirm))
    return Kernel(service), Verifier(service)


def test_a_dropped_pool_shrink_is_found_resent_and_seen_repaired() -> None:
    kernel, verifier = rig()
    web, io = pod("web", qos="burstable"), pod("io", qos="burstable", pins="0")
    kernel.admit(web, container("c-web", web))
    kernel.admit(io, container("c-io", io), apply=False)  # the runtime dropped web's shrink
    read_from, paths = verifier.snapshot()
    assert paths == {"c-web": "/kubepods/c-web", "c-io": "/kubepods/c-io"}
    verdict = verifier.verify(kernel.observed(), read_from=read_from)
    assert [(m.container_id, m.cause) for m in verdict.found] == [("c-web", "cpus")]
    assert verdict.resend == ("c-web",)
    assert [m.container_id for m, sends in verifier.drifting()] == ["c-web"]
    kernel.send_background()  # the re-send lands
    assert kernel.cpus["c-web"] == CPUSet.parse("1-15")
    verdict = verifier.verify(kernel.observed(), read_from=kernel.service.ledger)
    assert [m.container_id for m in verdict.repaired] == ["c-web"]
    assert verifier.drifting() == []
    stats = kernel.service.statistics.snapshot()
    assert (stats["verify_passes"], stats["verify_drift_found"],
            stats["verify_drift_repaired"], stats["verify_drifting"]) == (2, 1, 1, 0)


def test_a_change_made_behind_the_plugins_back_is_undone() -> None:
    kernel, verifier = rig()
    web, io = pod("web", qos="burstable"), pod("io", qos="burstable", pins="0")
    kernel.admit(web, container("c-web", web))
    kernel.admit(io, container("c-io", io))
    kernel.cpus["c-web"] = CPUSet.parse("0-15")  # echo 0-15 > .../cpuset.cpus
    kernel.verify(verifier)
    kernel.send_background()
    assert kernel.cpus["c-web"] == CPUSet.parse("1-15")


def test_a_container_whose_placement_changed_during_the_read_waits_for_the_next_pass() -> None:
    kernel, verifier = rig()
    web, io = pod("web", qos="burstable"), pod("io", qos="burstable", pins="0")
    kernel.admit(web, container("c-web", web))
    read_from, _ = verifier.snapshot()
    seen = kernel.observed()  # read before the pin shrank the pool
    kernel.admit(io, container("c-io", io))
    verdict = verifier.verify(seen, read_from=read_from)
    assert verdict.found == ()
    assert verdict.checked == 0


def test_an_unreadable_cgroup_is_found_but_not_resent_and_a_gone_container_is_forgotten() -> None:
    kernel, verifier = rig()
    web = pod("web", qos="burstable")
    kernel.admit(web, container("c-web", web))
    verdict = verifier.verify({"c-web": Observed(cpus=None, problem="no cgroup at /x")},
                              read_from=kernel.service.ledger)
    assert [(m.cause, m.problem) for m in verdict.found] == [("unreadable", "no cgroup at /x")]
    assert verdict.resend == ()
    kernel.service.remove("c-web", "ns/web/main")
    verifier.verify({}, read_from=kernel.service.ledger)
    assert verifier.drifting() == []


def test_a_container_the_runtime_never_fixes_becomes_unrepairable_once_and_is_still_resent(
        ) -> None:
    kernel, verifier = rig()
    web, io = pod("web", qos="burstable"), pod("io", qos="burstable", pins="0")
    kernel.admit(web, container("c-web", web))
    kernel.admit(io, container("c-io", io), apply=False)
    gave_up = []
    for _ in range(MAX_ATTEMPTS + 2):
        verdict = verifier.verify(kernel.observed(), read_from=kernel.service.ledger)
        gave_up.extend(verdict.unrepairable)
        assert verdict.resend == ("c-web",)
    assert [m.container_id for m in gave_up] == ["c-web"]
    assert kernel.service.statistics.snapshot()["verify_drift_unrepairable"] == 1


def test_cpus_a_shrink_gave_up_go_to_no_other_exclusive_owner_until_the_kernel_shows_them_left(
        ) -> None:
    kernel, verifier = rig()
    db, other = pod("db"), pod("other")
    kernel.admit(db, container("c-db", db, cpu_limit=14))
    # The shrink to 2 CPUs is not applied yet (or was dropped): the container still runs on 14.
    kernel.service.resize(db, with_path(container("c-db", db, cpu_limit=2)))
    kept = kernel.service.ledger.entries["c-db"].cpus
    assert len(kept) == 2
    assert kernel.service.engine.draining == kernel.cpus["c-db"] - kept
    with pytest.raises(InsufficientCpusError, match="12 more given up by running containers "
                       r"are kept until the kernel shows them left \(inspect: draining\)"):
        kernel.service.admit(other, with_path(container("c-other", other, cpu_limit=4)))
    kernel.verify(verifier)  # the kernel still shows 14 CPUs: nothing confirmed
    assert len(kernel.service.engine.draining) == 12
    kernel.cpus["c-db"] = kept  # the shrink lands
    kernel.verify(verifier)
    assert kernel.service.engine.draining == CPUSet()
    kernel.admit(other, container("c-other", other, cpu_limit=4))


def test_cpus_a_failed_move_off_a_pin_kept_go_to_no_exclusive_owner_after_the_pin_leaves(
        ) -> None:
    """The move off a new pin rides on the pin's answer; the runtime refused it, so the moved
    container still runs on the pinned CPUs. When the pin goes they are free in the ledger, but
    no other exclusive owner gets them until the kernel shows the container left them."""
    kernel, verifier = rig()
    db, io, other = pod("db"), pod("io", qos="burstable", pins="0-3,8-11"), pod("other")
    kernel.admit(db, with_path(container("c-db", db, cpu_limit=8)))
    assert kernel.cpus["c-db"] == CPUSet.parse("0-3,8-11")  # one socket
    kernel.admit(io, with_path(container("c-io", io)), apply=False)  # c-db's move failed
    kernel.verify(verifier)
    kernel.service.remove("c-io", "ns/io/main")
    assert kernel.service.engine.draining == CPUSet.parse("0-3,8-11")
    with pytest.raises(InsufficientCpusError):
        kernel.service.admit(other, with_path(container("c-other", other, cpu_limit=1)))
    kernel.verify(verifier)  # still there in the kernel: still draining
    assert kernel.service.engine.draining == CPUSet.parse("0-3,8-11")
    kernel.send_background()  # the verifier's re-send of the move lands
    assert kernel.cpus["c-db"] == CPUSet.parse("4-7,12-15")
    kernel.verify(verifier)
    assert kernel.service.engine.draining == CPUSet()
    kernel.admit(other, with_path(container("c-other", other, cpu_limit=1)))
    assert kernel.cpus["c-other"] <= CPUSet.parse("0-3,8-11")


def test_without_confirmation_released_cpus_are_free_at_once() -> None:
    kernel, _ = rig(confirm=False)
    db, other = pod("db"), pod("other")
    kernel.admit(db, container("c-db", db, cpu_limit=14))
    kernel.service.resize(db, container("c-db", db, cpu_limit=2))
    assert kernel.service.engine.draining == CPUSet()
    kernel.admit(other, container("c-other", other, cpu_limit=4))


def test_a_container_without_a_cgroup_path_is_trusted_to_have_left_what_it_gave_up() -> None:
    service = PlacementService(CpusetEngine(TOPOLOGY, confirm_releases=True))
    db = pod("db")
    service.admit(db, container("c-db", db, cpu_limit=4))
    service.resize(db, container("c-db", db, cpu_limit=2))
    assert len(service.engine.draining) == 2
    Verifier(service).verify({}, read_from=service.ledger)
    assert service.engine.draining == CPUSet()


def test_a_pending_repair_rides_on_the_next_answer_instead_of_a_call_of_its_own() -> None:
    kernel, verifier = rig()
    web, io, db = pod("web", qos="burstable"), pod("io", qos="burstable", pins="0"), pod("db")
    kernel.admit(web, container("c-web", web))
    kernel.admit(io, container("c-io", io), apply=False)  # web's shrink dropped
    kernel.verify(verifier)
    assert kernel.service.pusher.pending() == {"c-web"}
    kernel.admit(db, container("c-db", db, cpu_limit=1))  # the next event's answer
    assert kernel.cpus["c-web"] == kernel.service.engine.shared_pool()
    assert kernel.service.pusher.pending() == frozenset()
    assert kernel.service.pusher.take_batch() == []


def test_the_pusher_waits_for_a_quiet_runtime_before_a_call_of_its_own() -> None:
    import asyncio

    kernel, _ = rig()
    web, db = pod("web", qos="burstable"), pod("db")
    kernel.admit(web, container("c-web", web))
    kernel.admit(db, container("c-db", db, cpu_limit=1))
    kernel.service.remove("c-db", "ns/db/main")  # the pool's growth goes to the pusher
    quiet = False
    sent: list[str] = []

    async def send(batch: object) -> None:
        sent.append("sent")

    async def scenario() -> None:
        nonlocal quiet
        task = asyncio.create_task(kernel.service.pusher.run(send, quiet=lambda: quiet))
        await asyncio.sleep(0.2)
        assert sent == []  # the runtime is busy: nothing sent
        quiet = True
        while not sent:
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_container_waiting_for_its_start_is_not_read_it_has_no_cgroup_yet() -> None:
    kernel, verifier = rig()
    web, db = pod("web", qos="burstable"), pod("db")
    kernel.admit(web, container("c-web", web))
    kernel.service.admit(db, with_path(container("c-db", db, cpu_limit=1)))
    _, paths = verifier.snapshot()
    assert set(paths) == {"c-web"}
    kernel.service.starts.started("c-db", "ns/db/main")
    _, paths = verifier.snapshot()
    assert set(paths) == {"c-web", "c-db"}


class Lifts:
    """A quota writer that lifts the quota of the kernel in ``quotas`` (by cgroup path)."""

    def __init__(self, quotas: dict[str, int]) -> None:
        self.quotas = quotas

    def lift(self, cgroups_path: str) -> str:
        self.quotas[cgroups_path.rpartition("/")[2]] = -1
        return ""


def test_a_quota_back_in_an_exclusive_containers_kernel_is_lifted_again_never_resent() -> None:
    kernel, verifier = rig()
    db = pod("db")
    kernel.admit(db, container("c-db", db, cpu_limit=2))
    quotas = {"c-db": 200_000}  # the runtime wrote its record's quota back
    kernel.service.quota.writer = Lifts(quotas)
    read_from, _ = verifier.snapshot()
    observed = {cid: dataclasses.replace(seen, cfs_quota=quotas[cid])
                for cid, seen in kernel.observed().items()}
    verdict = verifier.verify(observed, read_from=read_from)
    assert [(m.container_id, m.cause) for m in verdict.found] == [("c-db", "quota")]
    assert quotas == {"c-db": -1}
    assert kernel.service.pusher.take_batch() == []  # a re-send would write the quota back
    observed = {cid: dataclasses.replace(seen, cfs_quota=quotas[cid])
                for cid, seen in kernel.observed().items()}
    verdict = verifier.verify(observed, read_from=kernel.service.ledger)
    assert [m.container_id for m in verdict.repaired] == ["c-db"]


def test_a_container_no_longer_on_exclusive_cpus_alone_is_not_held_to_no_quota() -> None:
    kernel, verifier = rig()
    db, web = pod("db"), pod("web", qos="burstable")
    kernel.admit(db, container("c-db", db, cpu_limit=2))
    kernel.admit(web, container("c-web", web))
    exclusive = kernel.service.placement("c-db")
    assert exclusive is not None
    # As if re-placed behind the set's back (a hotplug): the set says lifted, the ledger shared.
    kernel.service.quota.decide("c-web", exclusive, kernel.service.exclusive_quota)
    assert "c-web" in kernel.service.quota.unthrottled()
    read_from, _ = verifier.snapshot()
    observed = {cid: dataclasses.replace(seen, cfs_quota=50_000)
                for cid, seen in kernel.observed().items()}
    verdict = verifier.verify(observed, read_from=read_from)
    assert [(m.container_id, m.cause) for m in verdict.found] == [("c-db", "quota")]


def test_a_pass_judges_the_quota_of_only_the_containers_running_unthrottled() -> None:
    kernel, verifier = rig()
    db, web = pod("db"), pod("web", qos="burstable")
    kernel.admit(db, container("c-db", db, cpu_limit=2))
    kernel.admit(web, container("c-web", web))
    assert verifier.quotas_judged() == {"c-db"}  # the shared container's file is not read
