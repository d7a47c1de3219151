"""Integer containers on real SMT siblings: whole cores first, odd CPUs on orphan threads, and a
request that fits one NUMA node inside one node, as the guest kernel's own cgroup files and
``/proc/<pid>/status`` show it."""

from __future__ import annotations

from cpuset_core.cpuset import CPUSet
from tests.vm import kernel
from tests.vm.runtime import Guest, Pods, wait_consistent


def cores_touched(cpus: CPUSet) -> list[CPUSet]:
    return [core for core in kernel.cores() if not core.isdisjoint(cpus)]


def exclusive_cpus(guest: Guest, pods: Pods, name: str, count: int) -> CPUSet:
    """Run a Guaranteed pod asking ``count`` CPUs; return the CPUs its cgroup is set to, checked
    to be what it runs on."""
    cid = pods.integer(name, count)
    where = kernel.placement(guest.cri, cid)
    assert where.cgroup.cpus == where.cpus, where.cgroup
    assert len(where.cpus) == count, where.cpus
    return where.cpus


def test_a_2_cpu_container_gets_a_sibling_pair_even_next_to_an_orphaned_thread(
        guest: Guest, pods: Pods) -> None:
    one = exclusive_cpus(guest, pods, "one", 1)  # leaves its core's other thread an orphan
    two = exclusive_cpus(guest, pods, "two", 2)
    assert two in kernel.cores(), f"{two} is not one core's threads ({kernel.cores()})"
    assert two.isdisjoint(one)
    wait_consistent(guest)


def test_a_3_cpu_container_gets_a_whole_core_and_an_orphan_never_two_half_cores(
        guest: Guest, pods: Pods) -> None:
    three = exclusive_cpus(guest, pods, "three", 3)
    touched = cores_touched(three)
    assert len(touched) == 2, f"{three} spreads over cores {touched}"
    assert sum(core <= three for core in touched) == 1, f"{three}: cores {touched}"
    wait_consistent(guest)


def test_a_4_cpu_container_stays_inside_one_numa_node_when_the_lowest_cpus_span_two(
        guest: Guest, pods: Pods) -> None:
    two = exclusive_cpus(guest, pods, "two", 2)
    four = exclusive_cpus(guest, pods, "four", 4)
    assert len(kernel.node_of(four)) == 1, f"{four} spans NUMA nodes {kernel.node_of(four)}"
    assert all(core <= four for core in cores_touched(four)), f"{four} splits a core"
    assert four.isdisjoint(two)
    wait_consistent(guest)
