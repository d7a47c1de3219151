"""A NUMA node with CPUs and no memory: the kernel refuses it in ``cpuset.mems``, so a pin on
its CPUs must get the memory node(s) nearest to it by the kernel's distances."""

from __future__ import annotations

from cpuset_core.cpuset import CPUSet
from tests.vm import kernel
from tests.vm.conftest import ShapeFacts
from tests.vm.runtime import Guest, Pods, wait_consistent


def nearest_memory(node: int) -> CPUSet:
    distance = kernel.distances(node)
    with_memory = kernel.memory_nodes()
    best = min(distance[m] for m in with_memory)
    return CPUSet(m for m in with_memory if distance[m] == best)


def test_a_pin_on_the_memoryless_nodes_cpus_gets_its_nearest_memory_node(
        shape: ShapeFacts, guest: Guest, pods: Pods) -> None:
    (node,) = shape["memoryless"]
    assert node not in kernel.memory_nodes()
    expected = nearest_memory(node)
    assert expected != kernel.memory_nodes()  # the shape's distances make the answer specific
    pins = kernel.nodes()[node]
    cid = pods.pinned("near", pins.format())
    where = kernel.placement(guest.cri, cid)
    assert where.cpus == pins
    assert where.mems == expected
    assert where.cgroup.mems == expected
    wait_consistent(guest)


def test_a_pin_on_a_memory_node_and_the_memoryless_one_gets_both_memories(
        shape: ShapeFacts, guest: Guest, pods: Pods) -> None:
    (node,) = shape["memoryless"]
    nodes = kernel.nodes()
    other = next(n for n in sorted(nodes) if n in kernel.memory_nodes()
                 and n not in nearest_memory(node))
    pins = CPUSet([nodes[other].first(), nodes[node].first()])
    cid = pods.pinned("both", pins.format())
    where = kernel.placement(guest.cri, cid)
    assert where.cpus == pins
    assert where.mems == CPUSet([other]) | nearest_memory(node)
    wait_consistent(guest)
