"""Isolated CPUs (``isolcpus=`` on the kernel command line, read from
``/sys/devices/system/cpu/isolated``) and CPUs the plugin's configuration reserves
(``cpus.reserved`` with ``strict_reservation``): shared containers never run there, integer
containers neither unless they ask (``isolated-cpus.nri-cpuset.io``, issue 32), and a pin may
still name an isolated CPU."""

from __future__ import annotations

from cpuset_core.cpuset import CPUSet
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import guaranteed
from tests.vm import kernel
from tests.vm.conftest import ShapeFacts
from tests.vm.runtime import Guest, Pods, wait_consistent


def kept_away(shape: ShapeFacts) -> CPUSet:
    isolated = kernel.isolated()
    assert isolated, "this shape must boot with isolated CPUs"
    reserved = CPUSet.parse(shape["reserved"])
    assert reserved, "this shape's plugin must reserve CPUs"
    return isolated | reserved


def test_shared_containers_never_run_on_isolated_or_reserved_cpus(
        shape: ShapeFacts, guest: Guest, pods: Pods) -> None:
    pool = kernel.online() - kept_away(shape)
    cid = pods.shared("app")
    for container in (guest.web, cid):
        where = kernel.placement(guest.cri, container)
        assert where.cpus == pool, where
        assert where.cgroup.cpus == pool, where.cgroup


def test_integer_containers_get_neither_isolated_nor_reserved_cpus_and_the_pool_shrinks(
        shape: ShapeFacts, guest: Guest, pods: Pods) -> None:
    cid = pods.integer("db", 2)
    mine = kernel.placement(guest.cri, cid).cpus
    assert mine.isdisjoint(kept_away(shape)), mine
    wait_consistent(guest)
    assert kernel.placement(guest.cri, guest.web).cpus == \
        kernel.online() - kept_away(shape) - mine


def test_a_pin_may_name_an_isolated_cpu_and_the_shared_pool_stays_as_it_was(
        shape: ShapeFacts, guest: Guest, pods: Pods) -> None:
    target = CPUSet([kernel.isolated().first()])
    cid = pods.pinned("rt", target.format())
    assert kernel.placement(guest.cri, cid).cpus == target
    wait_consistent(guest)
    assert kernel.placement(guest.cri, guest.web).cpus == kernel.online() - kept_away(shape)


def test_a_container_asking_for_isolated_cpus_gets_them_and_one_asking_for_too_many_does_not(
        shape: ShapeFacts, guest: Guest, pods: Pods) -> None:
    isolated = kernel.isolated()
    asking = {"isolated-cpus.nri-cpuset.io/pod": "true"}
    rt = pods.container(pods.pod("rt", QosClass.GUARANTEED, annotations=asking), "app",
                        guaranteed(len(isolated), "64Mi"))
    assert kernel.placement(guest.cri, rt).cpus == isolated
    other = pods.integer("db", 2)  # not asking: never on them, though they are taken anyway
    assert kernel.placement(guest.cri, other).cpus.isdisjoint(kept_away(shape))
    # None left: best effort (the default) places it on ordinary CPUs and says so.
    late = pods.container(pods.pod("late", QosClass.GUARANTEED, annotations=asking), "app",
                          guaranteed(1, "64Mi"))
    assert kernel.placement(guest.cri, late).cpus.isdisjoint(kept_away(shape))
    [entry] = [c for c in guest.state()["containers"] if c["id"] == late]
    assert "not isolated (best effort)" in entry["reason"], entry
    wait_consistent(guest)
