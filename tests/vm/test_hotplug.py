"""Real CPU hotplug (``cpuN/online``): an integer container whose CPU the kernel takes offline
is moved to CPUs that are all online, the shared pool shrinks, no CPU has two owners, and the
CPU is used again when it comes back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cpuset_core.cpuset import CPUSet
from tests.vm import kernel
from tests.vm.runtime import Guest, Pods, wait_consistent, wait_until


@contextmanager
def offline(cpu: int) -> Iterator[None]:
    kernel.set_online(cpu, state=False)
    try:
        yield
    finally:
        kernel.set_online(cpu, state=True)


def test_a_cpu_going_offline_under_an_integer_container_moves_it_and_comes_back_to_the_pool(
        guest: Guest, pods: Pods) -> None:
    cid = pods.integer("db", 2)
    before = kernel.placement(guest.cri, cid).cpus
    victim = next(cpu for cpu in before if kernel.hotpluggable(cpu))
    web_before = kernel.placement(guest.cri, guest.web).cpus
    with offline(victim):
        assert victim not in kernel.online()
        wait_until(lambda: victim not in kernel.placement(guest.cri, cid).cgroup.cpus,
                   f"the plugin to move the container off CPU {victim}", 30)
        moved = kernel.placement(guest.cri, cid)
        assert len(moved.cpus) == 2, moved
        assert moved.cpus <= kernel.online()
        wait_consistent(guest)
        web = kernel.placement(guest.cri, guest.web).cpus
        assert web == kernel.online() - moved.cpus, web
        assert len(web) < len(web_before)
    wait_until(lambda: victim in kernel.placement(guest.cri, guest.web).cpus,
               f"CPU {victim} to be used again once back online", 30)
    wait_consistent(guest)
    assert kernel.online() == CPUSet.union_of(
        [kernel.placement(guest.cri, guest.web).cpus, kernel.placement(guest.cri, cid).cpus])
