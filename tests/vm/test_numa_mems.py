"""``cpuset.mems`` of pinned pods on real NUMA nodes: the memory nodes of the pinned CPUs, read
from the container's cgroup and ``Mems_allowed_list``; containers that are not pinned keep the
kernel's default (every node with memory)."""

from __future__ import annotations

from cpuset_core.cpuset import CPUSet
from tests.vm import kernel
from tests.vm.runtime import Guest, Pods, wait_consistent


def memory_nodes_with_cpus() -> list[int]:
    nodes = kernel.nodes()
    return [n for n in sorted(nodes) if nodes[n] and n in kernel.memory_nodes()]


def pinned_placement(guest: Guest, pods: Pods, name: str, pins: CPUSet) -> kernel.Placement:
    cid = pods.pinned(name, pins.format())
    where = kernel.placement(guest.cri, cid)
    assert where.cpus == pins
    assert where.cgroup.cpus == pins
    assert where.cgroup.mems == where.mems, where.cgroup  # set by the plugin, not inherited
    return where


def test_a_pin_on_cpus_of_two_numa_nodes_gets_the_memory_of_both(
        guest: Guest, pods: Pods) -> None:
    first, last = memory_nodes_with_cpus()[0], memory_nodes_with_cpus()[-1]
    nodes = kernel.nodes()
    pins = CPUSet([nodes[first].last(), nodes[last].first()])
    where = pinned_placement(guest, pods, "across", pins)
    assert where.mems == CPUSet([first, last])
    wait_consistent(guest)


def test_a_pin_on_one_numa_node_gets_that_nodes_memory_only(guest: Guest, pods: Pods) -> None:
    last = memory_nodes_with_cpus()[-1]
    where = pinned_placement(guest, pods, "local", kernel.nodes()[last])
    assert where.mems == CPUSet([last])
    assert where.mems != kernel.memory_nodes()
    wait_consistent(guest)


def test_containers_that_are_not_pinned_keep_every_memory_node(guest: Guest, pods: Pods) -> None:
    cid = pods.integer("db", 2)
    for container in (cid, guest.web):
        assert kernel.placement(guest.cri, container).mems == kernel.memory_nodes()
