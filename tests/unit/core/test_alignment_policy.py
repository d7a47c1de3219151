"""The node's alignment policy (issue 31): none, best-effort, restricted, single-numa-node,
with scope container or pod. Strict policies refuse, naming what did not fit where, and a
refusal changes nothing.

DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8 are siblings.
FOUR_NODES: 2 sockets × 2 nodes × 2 cores × 2 threads: node k holds 4 CPUs.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_core.devices import DeviceLocality
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import AlignmentError
from cpuset_core.model import ContainerFacts, PodFacts
from cpuset_core.policy.alignment import Alignment, AlignmentScope, fewest_nodes, misalignment
from cpuset_core.policy.options import AllocationOptions
from cpuset_core.settings import Settings
from tests.builders.facts import container, pod, subject
from tests.unit.core.topologies import DUAL_SOCKET, TWO_SOCKETS_TWO_NODES, cpus

FOUR_NODES = TWO_SOCKETS_TWO_NODES


def on(*nodes: int) -> DeviceLocality:
    return DeviceLocality(device="/dev/nvme", pci=("0000:41:00.0",), numa_nodes=CPUSet(nodes))


def engine(policy: Alignment, scope: AlignmentScope = AlignmentScope.CONTAINER,
           topology: object = DUAL_SOCKET) -> CpusetEngine:
    return CpusetEngine(topology, Settings(allocation=AllocationOptions(  # type: ignore[arg-type]
        alignment=policy, alignment_scope=scope)))


def integer(of: PodFacts, name: str, count: int, *devices: DeviceLocality) -> ContainerFacts:
    return replace(container(f"{of.name}-{name}", of, cpu_limit=count, name=name),
                   devices=devices)


def create(e: CpusetEngine, name: str, count: int, *devices: DeviceLocality) -> CPUSet:
    of = pod(name)
    plan = e.plan_create(of, integer(of, "main", count, *devices))
    e.commit(plan)
    assert plan.placement is not None
    return plan.placement.cpus


def refused(e: CpusetEngine, name: str, count: int, *devices: DeviceLocality) -> AlignmentError:
    of = pod(name)
    before = e.ledger
    with pytest.raises(AlignmentError) as caught:
        e.plan_create(of, integer(of, "main", count, *devices))
    assert e.ledger is before  # nothing changed
    assert caught.value.subject == subject(of)
    assert caught.value.reason == "topology-affinity"
    return caught.value


# -- the fewest nodes ---------------------------------------------------------------------------


@pytest.mark.parametrize(("count", "fewest"), [(1, 1), (8, 1), (9, 2), (16, 2), (17, None)])
def test_the_fewest_nodes_a_request_needs_on_this_machine(count: int, fewest: int | None) -> None:
    assert fewest_nodes(DUAL_SOCKET, DUAL_SOCKET.online, count) == fewest


def test_best_effort_and_none_never_call_anything_misaligned() -> None:
    for policy in (Alignment.NONE, Alignment.BEST_EFFORT):
        assert misalignment(DUAL_SOCKET, policy, cpus("0,4"), near=CPUSet((1,)),
                            eligible=DUAL_SOCKET.online) == ""


# -- single-numa-node ---------------------------------------------------------------------------


def test_single_numa_node_refuses_devices_on_two_nodes() -> None:
    error = refused(engine(Alignment.SINGLE_NUMA_NODE), "db", 2, on(0), on(1))
    assert str(error) == (
        "ns/db/main: 2 exclusive CPU(s) cannot be aligned under the single-numa-node policy "
        "([cpus] alignment): its devices (and pod) are on NUMA nodes 0-1: a container's CPUs "
        "and devices must share one node")


def test_single_numa_node_refuses_more_than_a_node_holds() -> None:
    error = refused(engine(Alignment.SINGLE_NUMA_NODE), "big", 9)
    assert error.why == "9 CPU(s) are more than any NUMA node has for exclusive use (at most 8)"


def test_single_numa_node_refuses_when_the_devices_node_is_full_where_best_effort_goes_on() -> None:
    strict, lax = engine(Alignment.SINGLE_NUMA_NODE), engine(Alignment.BEST_EFFORT)
    for e in (strict, lax):
        create(e, "fill", 6, on(1))  # node 1 keeps 2 free
    error = refused(strict, "db", 4, on(1))
    assert error.why == "NUMA node 1 (its devices') has too few free CPUs for 4 exclusive CPU(s)"
    assert DUAL_SOCKET.numa_nodes_of(create(lax, "db", 4, on(1))) == CPUSet((0,))


def test_single_numa_node_refuses_a_request_no_node_has_room_for_now() -> None:
    e = engine(Alignment.SINGLE_NUMA_NODE)
    create(e, "a", 6)
    create(e, "b", 6)  # 2 free on each node
    assert refused(e, "c", 4).why == "no NUMA node has 4 free CPU(s) now"


def test_single_numa_node_admits_what_fits_one_node_near_its_devices() -> None:
    e = engine(Alignment.SINGLE_NUMA_NODE)
    assert DUAL_SOCKET.numa_nodes_of(create(e, "db", 4, on(1))) == CPUSet((1,))
    assert DUAL_SOCKET.numa_nodes_of(create(e, "plain", 8)) == CPUSet((0,))


# -- restricted ----------------------------------------------------------------------------------


def test_restricted_admits_a_span_over_the_fewest_nodes() -> None:
    e = engine(Alignment.RESTRICTED, topology=FOUR_NODES)
    assert len(FOUR_NODES.numa_nodes_of(create(e, "wide", 6))) == 2


def test_restricted_refuses_a_span_over_more_nodes_than_the_machine_needs() -> None:
    strict = engine(Alignment.RESTRICTED, topology=FOUR_NODES)
    lax = engine(Alignment.BEST_EFFORT, topology=FOUR_NODES)
    for e in (strict, lax):
        for node in range(4):
            create(e, f"f{node}", 2, on(node))  # 2 free CPUs left on every node
    error = refused(strict, "wide", 6)
    assert error.why.startswith("6 CPU(s) fit in 2 NUMA node(s) on this machine but only 3 (")
    assert len(FOUR_NODES.numa_nodes_of(create(lax, "wide", 6))) == 3


def test_restricted_refuses_cpus_outside_the_devices_nodes() -> None:
    e = engine(Alignment.RESTRICTED)
    create(e, "fill", 6, on(1))
    assert refused(e, "db", 4, on(1)).why == (
        "its devices' NUMA node(s) 1 have too few free CPUs for 4 exclusive CPU(s) in 1 node(s)")


def test_restricted_refuses_more_than_the_devices_nodes_could_ever_hold() -> None:
    assert refused(engine(Alignment.RESTRICTED), "big", 9, on(1)).why == (
        "9 CPU(s) are more than its devices' NUMA node(s) 1 have for exclusive use")


# -- none ------------------------------------------------------------------------------------


def test_none_ignores_devices() -> None:
    e = engine(Alignment.NONE)
    assert DUAL_SOCKET.numa_nodes_of(create(e, "db", 2, on(1))) == CPUSet((0,))


# -- scope ---------------------------------------------------------------------------------


def test_pod_scope_puts_a_pods_later_container_beside_its_first() -> None:
    e = engine(Alignment.BEST_EFFORT, AlignmentScope.POD)
    of = pod("app")
    first = e.plan_create(of, integer(of, "a", 2, on(1)))
    e.commit(first)
    e.commit(e.plan_create(pod("other"), integer(pod("other"), "x", 4, on(0))))  # node 0 fuller
    second = e.plan_create(of, integer(of, "b", 2))
    assert second.placement is not None
    assert DUAL_SOCKET.numa_nodes_of(second.placement.cpus) == CPUSet((1,))


def test_container_scope_places_the_pods_later_container_on_its_own() -> None:
    e = engine(Alignment.BEST_EFFORT, AlignmentScope.CONTAINER)
    of = pod("app")
    e.commit(e.plan_create(of, integer(of, "a", 2, on(1))))
    e.commit(e.plan_create(pod("other"), integer(pod("other"), "x", 4, on(0))))
    second = e.plan_create(of, integer(of, "b", 2))
    assert second.placement is not None
    assert DUAL_SOCKET.numa_nodes_of(second.placement.cpus) == CPUSet((0,))


def test_pod_scope_single_numa_node_refuses_a_container_whose_device_is_off_its_pods_node() -> None:
    e = engine(Alignment.SINGLE_NUMA_NODE, AlignmentScope.POD)
    of = pod("app")
    e.commit(e.plan_create(of, integer(of, "a", 2, on(0))))
    before = e.ledger
    with pytest.raises(AlignmentError) as caught:
        e.plan_create(of, integer(of, "b", 2, on(1)))
    assert e.ledger is before
    assert "are on NUMA nodes 0-1" in caught.value.why


# -- resize --------------------------------------------------------------------------------


def test_a_resize_under_single_numa_node_moves_to_a_node_that_holds_it_else_is_refused() -> None:
    e = engine(Alignment.SINGLE_NUMA_NODE)
    of = pod("db")
    facts = integer(of, "main", 4)
    e.commit(e.plan_create(of, facts))  # node 0
    create(e, "side", 3)  # node 0 too (best fit): 1 free there, 8 on node 1
    grown = e.plan_resize(of, replace(facts, cpu_quota=6 * 100_000))
    assert grown.placement is not None
    assert DUAL_SOCKET.numa_nodes_of(grown.placement.cpus) == CPUSet((1,))
    assert "re-placed to stay aligned" in grown.reason
    create(e, "fill", 5, on(1))  # node 1 keeps 3 free
    before = e.ledger
    with pytest.raises(AlignmentError):
        e.plan_resize(of, replace(facts, cpu_quota=6 * 100_000))
    assert e.ledger is before


def test_a_rebuild_under_none_places_without_device_hints() -> None:
    for policy, node in ((Alignment.NONE, 0), (Alignment.BEST_EFFORT, 1)):
        e = engine(policy)
        of = pod("db")
        e.commit(e.plan_synchronize([of], [integer(of, "main", 2, on(1))]))
        placed = e.placement("db-main")
        assert placed is not None
        assert DUAL_SOCKET.numa_nodes_of(placed.cpus) == CPUSet((node,)), policy
