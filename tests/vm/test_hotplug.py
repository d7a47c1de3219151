"""Real CPU hotplug (``cpuN/online``): an integer container whose CPU the kernel takes offline
is moved to CPUs that are all online, the shared pool shrinks, no CPU has two owners, and the
CPU is used again when it comes back.

On cgroup v1 the kernel removes an offline CPU from every cpuset and gives it back to none:
the pod-level cgroups above the containers lack it afterwards, so no container below them can
get it, whatever the plugin asks. The test checks that this is so, restores those cgroups as an
operator must on v1 (docs/operations.md), and then requires the plugin's retried update to give
the CPU back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cpuset_core.cpuset import CPUSet
from tests.vm import kernel
from tests.vm.conftest import ShapeFacts
from tests.vm.runtime import Guest, Pods, wait_consistent, wait_until


@contextmanager
def offline(cpu: int) -> Iterator[None]:
    kernel.set_online(cpu, state=False)
    try:
        yield
    finally:
        kernel.set_online(cpu, state=True)


def test_a_cpu_going_offline_under_an_integer_container_moves_it_and_comes_back_to_the_pool(
        shape: ShapeFacts, guest: Guest, pods: Pods) -> None:
    cid = pods.integer("db", 2)
    before = kernel.placement(guest.cri, cid).cpus
    victim = next(cpu for cpu in before if kernel.hotpluggable(cpu))
    web_before = kernel.placement(guest.cri, guest.web).cpus

    def moved() -> bool:
        # cgroup v1 drops an offline CPU from every cpuset by itself: wait for the plugin's
        # new set of the container's size, not just for the CPU to be gone.
        now = kernel.placement(guest.cri, cid).cgroup.cpus
        return len(now) == len(before) and victim not in now

    with offline(victim):
        assert victim not in kernel.online()
        wait_until(moved, lambda: f"the plugin to move the container off CPU {victim}: it has "
                                  f"{kernel.placement(guest.cri, cid)}\n"
                                  f"{kernel.ancestry(guest.cri, cid)}", 30)
        now = kernel.placement(guest.cri, cid)
        assert now.cpus <= kernel.online()
        assert now.cpus in kernel.cores(), f"{now.cpus} is not a whole core"
        wait_consistent(guest)
        web = kernel.placement(guest.cri, guest.web).cpus
        assert web == kernel.online() - now.cpus, web
        assert len(web) < len(web_before)
    if shape["cgroup"] == 1:
        lacking = [d for d in kernel.v1_pod_tiers()
                   if victim not in kernel.read_list(d / "cpuset.cpus")]
        assert lacking, f"cgroup v1 gave CPU {victim} back to the pod cgroups by itself"
        kernel.restore_v1_pod_tiers()
    wait_until(lambda: victim in kernel.placement(guest.cri, guest.web).cpus,
               lambda: f"CPU {victim} to be used again once back online: web/app has "
                       f"{kernel.placement(guest.cri, guest.web)}\n"
                       f"{kernel.ancestry(guest.cri, guest.web)}", 30)
    wait_consistent(guest)
    assert kernel.online() == CPUSet.union_of(
        [kernel.placement(guest.cri, guest.web).cpus, kernel.placement(guest.cri, cid).cpus])
