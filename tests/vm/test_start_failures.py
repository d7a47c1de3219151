"""Containers that never run hold nothing, in a real guest kernel with the real runtime.

A Guaranteed pod whose command does not exist, driven the way the kubelet drives it (the lab's
pod worker: the dead instance kept, the next attempt beside it after a back-off), gets its CPUs
at creation and gives them back after its failed start: the session's shared container is on
the whole pool again within the verifier's period, and the next attempt fails with the
runtime's own error. A container created and never started keeps its CPUs for the grace (here
shortened through a live reload of the plugin's configuration) and then holds nothing; its
start after that is refused.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.pod_worker import Backoff, ContainerSpec, PodWorker
from cpuset_lab.resources import guaranteed
from tests.vm import kernel
from tests.vm.runtime import (
    DRIVER,
    SCALE,
    Guest,
    Pods,
    configured,
    wait_consistent,
    wait_until,
)

VERIFY_PERIOD = 5
"""The plugin's default ``runtime.verify_period`` (host seconds; ``wait_until`` scales)."""
GRACE = 15
"""The shortened ``runtime.start_grace`` (guest seconds)."""


def pool(guest: Guest) -> CPUSet:
    return CPUSet.parse(guest.state()["shared_pool"])


def web_on_the_whole_pool(guest: Guest) -> bool:
    return pool(guest) == kernel.online() and kernel.placement(
        guest.cri, guest.web).cpus == kernel.online()


def held(guest: Guest) -> set[str]:
    return {c["id"] for c in guest.state()["containers"]} - {guest.web}


def grace(seconds: int) -> AbstractContextManager[None]:
    """The plugin's ``runtime.start_grace`` set to ``seconds`` by a live reload, then put
    back."""
    return configured(f"[runtime]\nstart_grace = {seconds}\n")


def test_a_failed_start_gives_its_cpus_back_and_the_next_attempt_fails_the_same_way(
        guest: Guest, pods: Pods) -> None:
    uid = "failing-start-uid"
    spec = PodSpec(name="bad", uid=uid, cgroup_parent=cgroup_parent(QosClass.GUARANTEED, uid,
                                                                    driver=DRIVER))
    app = ContainerSpec(name="app", resources=guaranteed(2, "64Mi"), command=["/nonexistent"])
    worker = PodWorker(guest.cri, spec, [app], guest.lab.image,
                       backoff=Backoff(initial=10.0 * SCALE, cap=40.0 * SCALE))
    try:
        worker.sync()
        (first,) = worker.attempts
        assert first.failed_at == "start", first
        assert "/nonexistent" in first.error, first
        assert "nri-cpuset" not in first.error, first
        wait_until(lambda: web_on_the_whole_pool(guest) and not held(guest),
                   lambda: f"the failed container's CPUs back in the pool: pool {pool(guest)}, "
                           f"held {held(guest)}", VERIFY_PERIOD)
        wait_until(lambda: (worker.sync() or len(worker.attempts)) == 2, "the next attempt",
                   30)
        second = worker.attempts[-1]
        assert (second.attempt, second.failed_at) == (1, "start"), second
        assert "nri-cpuset" not in second.error, second
        kept = [c.id for c in guest.cri.list_containers(worker.sandbox_id)]
        assert kept == [second.container_id] or set(kept) == {first.container_id,
                                                             second.container_id}
        wait_until(lambda: web_on_the_whole_pool(guest) and not held(guest),
                   "nothing held after the second attempt", VERIFY_PERIOD)
        wait_consistent(guest)
    finally:
        worker.close()


def test_a_container_never_started_keeps_its_cpu_for_the_grace_then_holds_nothing(
        guest: Guest, pods: Pods) -> None:
    pod = pods.pod("idle", QosClass.GUARANTEED)
    cid = guest.cri.create_container(pod, None, "app", guest.lab.image,
                                     resources=guaranteed(1, "64Mi"))
    entry = next(c for c in guest.state()["containers"] if c["id"] == cid)
    mine = CPUSet.parse(entry["cpus"])
    assert len(mine) == 1
    wait_until(lambda: kernel.placement(guest.cri, guest.web).cpus == kernel.online() - mine,
               "the shared container off the created container's CPU")
    with grace(GRACE):
        wait_until(lambda: web_on_the_whole_pool(guest) and cid not in held(guest),
                   lambda: f"its CPU back after the {GRACE} s grace: held {held(guest)}",
                   GRACE / SCALE + 2 * VERIFY_PERIOD)
        with pytest.raises(CriError) as refused:
            guest.cri.start(cid)
        assert "start refused" in refused.value.details
        assert f"not started within the {GRACE} s grace" in refused.value.details
    wait_consistent(guest)
