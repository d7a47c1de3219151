"""Device hints (issue 31): an integer container's exclusive CPUs come from the NUMA nodes of
its devices when they hold them; without a hint nothing changes; a pin keeps what it asked.

DUAL_SOCKET: 16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8 are siblings.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.classify import classify
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.devices import HINTS_CONTAINER_PREFIX, HINTS_POD, DeviceLocality, hinted_nodes
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import AnnotationValueError
from cpuset_core.invariants import violations
from cpuset_core.model import ContainerFacts, Kind
from cpuset_core.placing import away_by_kind
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.policy.options import AllocationOptions
from cpuset_core.settings import Settings
from tests.builders.facts import container, pod, subject
from tests.unit.core.exclusive_allocators import ALLOCATORS, nodes_of
from tests.unit.core.topologies import ALLOCATOR_SHAPES, DUAL_SOCKET, EPYC, cpus

NVME_ON_1 = DeviceLocality(device="/dev/nvme1n1", pci=("0000:41:00.0",), numa_nodes=CPUSet((1,)))
NVME_ON_0 = DeviceLocality(device="/dev/nvme0n1", pci=("0000:01:00.0",), numa_nodes=CPUSet((0,)))
NO_NODE = DeviceLocality(device="/dev/vda", pci=("0000:00:02.0",), why="numa_node is -1")


def with_devices(facts: ContainerFacts, *devices: DeviceLocality) -> ContainerFacts:
    return replace(facts, devices=devices)


REASONS: dict[str, str] = {}
"""The last plan's reason per container name (what ``explain`` shows)."""


def create(engine: CpusetEngine, name: str, count: int, *devices: DeviceLocality) -> CPUSet:
    of = pod(name)
    plan = engine.plan_create(of, with_devices(container(name, of, cpu_limit=count), *devices))
    engine.commit(plan)
    assert plan.placement is not None
    REASONS[name] = plan.reason
    return plan.placement.cpus


# -- the hint itself ---------------------------------------------------------------------------


def test_the_hint_is_the_union_of_the_nodes_devices_report_and_ignores_devices_without() -> None:
    assert hinted_nodes([NVME_ON_1, NO_NODE]) == CPUSet((1,))
    assert hinted_nodes([NVME_ON_0, NVME_ON_1]) == CPUSet((0, 1))
    assert hinted_nodes([NO_NODE]) == EMPTY
    assert hinted_nodes([]) == EMPTY


def test_a_device_describes_where_it_is_or_why_it_gives_no_hint() -> None:
    assert NVME_ON_1.describe() == "/dev/nvme1n1 (PCI 0000:41:00.0): NUMA node 1"
    assert NO_NODE.describe() == "/dev/vda (PCI 0000:00:02.0): no hint, numa_node is -1"


def test_classification_carries_the_hint_and_says_where_the_devices_are() -> None:
    of = pod("db")
    decided = classify(of, with_devices(container("c", of, cpu_limit=2), NVME_ON_1), Settings())
    assert decided.kind is Kind.INTEGER
    assert decided.near == CPUSet((1,))
    assert "devices on NUMA node 1 (/dev/nvme1n1 (PCI 0000:41:00.0): NUMA node 1)" in \
        decided.reason


@pytest.mark.parametrize(("annotations", "near"), [
    ({HINTS_POD: "false"}, EMPTY),
    ({HINTS_CONTAINER_PREFIX + "main": "false"}, EMPTY),
    ({HINTS_POD: "false", HINTS_CONTAINER_PREFIX + "main": "true"}, CPUSet((1,))),
    ({HINTS_POD: "true", HINTS_CONTAINER_PREFIX + "other": "false"}, CPUSet((1,))),
])
def test_annotations_turn_hints_off_per_pod_and_per_container_the_container_first(
        annotations: dict[str, str], near: CPUSet) -> None:
    of = pod("db", annotations=annotations)
    decided = classify(of, with_devices(container("c", of, cpu_limit=2), NVME_ON_1), Settings())
    assert decided.near == near
    assert decided.kind is Kind.INTEGER


@pytest.mark.parametrize("key", [HINTS_POD, HINTS_CONTAINER_PREFIX + "main"])
def test_a_hints_annotation_that_is_neither_true_nor_false_is_refused_naming_it(key: str) -> None:
    of = pod("db", annotations={key: "no"})
    with pytest.raises(AnnotationValueError) as refused:
        classify(of, container("c", of, cpu_limit=2), Settings())
    assert str(refused.value) == (f"{subject(of)}: annotation {key}='no' is invalid: expected "
                                  f"'true' or 'false'")
    assert refused.value.reason == "invalid-annotation"


# -- integer containers ------------------------------------------------------------------------


def test_an_integer_container_with_a_device_on_node_1_gets_cpus_on_node_1() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    assert DUAL_SOCKET.numa_nodes_of(create(engine, "plain", 2)) == CPUSet((0,))  # the default
    got = create(engine, "nvme", 2, NVME_ON_1)
    assert DUAL_SOCKET.numa_nodes_of(got) == CPUSet((1,))
    assert got == cpus("4,12")  # a whole core, as without a hint
    assert "near its devices (NUMA node 1)" in REASONS["nvme"]


def test_a_sibling_without_devices_is_placed_by_todays_rules_alone() -> None:
    """Hints are per container: another container is not drawn to (or kept from) the node of
    its neighbour's devices; here best fit puts it beside the first one, as it would anyway."""
    engine = CpusetEngine(DUAL_SOCKET)
    assert DUAL_SOCKET.numa_nodes_of(create(engine, "plain", 2)) == CPUSet((0,))
    assert DUAL_SOCKET.numa_nodes_of(create(engine, "nvme", 2, NVME_ON_1)) == CPUSet((1,))
    free = DUAL_SOCKET.online - engine.ledger.reserved
    expected = ExclusiveAllocator(DUAL_SOCKET).take(free, 2, exclusive=engine.ledger.exclusive)
    assert create(engine, "after", 2) == expected


def test_when_the_devices_node_is_too_full_the_container_goes_elsewhere_and_says_why() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    create(engine, "big", 6, NVME_ON_1)  # node 1 keeps 2 free CPUs
    got = create(engine, "nvme", 4, NVME_ON_1)
    assert DUAL_SOCKET.numa_nodes_of(got) == CPUSet((0,))
    assert ("its devices' NUMA node 1 hold only 2 free CPU(s)"
            in REASONS["nvme"])
    assert not violations(DUAL_SOCKET, engine.ledger, engine.settings)


def test_devices_on_two_nodes_allow_both_and_a_request_spanning_them_stays_on_them() -> None:
    engine = CpusetEngine(EPYC)  # one socket, node 0 = 0-7,16-23, node 1 = 8-15,24-31
    got = create(engine, "wide", 20, NVME_ON_0, NVME_ON_1)
    assert EPYC.numa_nodes_of(got) == CPUSet((0, 1))


def test_a_device_without_a_node_changes_nothing() -> None:
    hinted, plain = CpusetEngine(DUAL_SOCKET), CpusetEngine(DUAL_SOCKET)
    for count in (2, 3, 5):
        assert create(hinted, f"c{count}", count, NO_NODE) == create(plain, f"c{count}", count)


def test_whole_core_mode_near_devices_falls_back_when_the_node_has_no_whole_cores() -> None:
    allocator = ExclusiveAllocator(DUAL_SOCKET)
    free = cpus("0-3,8-11") | cpus("4,13")  # node 1: two threads, each beside a taken one
    whole = AllocationOptions(full_physical_cores=True)
    choice = allocator.choose(free, 2, near=CPUSet((1,)), options=whole)
    assert DUAL_SOCKET.numa_nodes_of(choice.cpus) == CPUSet((0,))
    assert choice.describe().startswith(
        "its devices' NUMA node 1 hold only 2 free CPU(s), not as whole cores (")


def test_a_move_off_a_new_pin_keeps_the_container_near_its_devices() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    got = create(engine, "nvme", 2, NVME_ON_1)
    of = pod("pin", pins=got.format())
    engine.commit(engine.plan_create(of, container("pin", of)))
    moved = engine.placement("nvme")
    assert moved is not None
    assert DUAL_SOCKET.numa_nodes_of(moved.cpus) == CPUSet((1,))


def test_a_rebuild_places_an_unplaced_container_near_its_devices() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    of = pod("nvme")
    facts = with_devices(container("nvme", of, cpu_limit=2), NVME_ON_1)
    engine.commit(engine.plan_synchronize([of], [facts]))
    placed = engine.placement("nvme")
    assert placed is not None
    assert DUAL_SOCKET.numa_nodes_of(placed.cpus) == CPUSet((1,))


# -- pins --------------------------------------------------------------------------------------


def test_a_pin_keeps_its_cpus_away_from_its_devices_and_says_so() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    of = pod("pin", pins="0-1")
    plan = engine.plan_create(of, with_devices(container("pin", of), NVME_ON_1))
    engine.commit(plan)
    assert plan.placement is not None
    assert plan.placement.cpus == cpus("0-1")
    assert "away from its devices: CPUs 0-1 on NUMA node 0, devices on 1" in plan.reason


def test_a_pin_on_its_devices_node_says_nothing_of_them_beyond_where_they_are() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    of = pod("pin", pins="4-5")
    plan = engine.plan_create(of, with_devices(container("pin", of), NVME_ON_1))
    assert "away from its devices" not in plan.reason


def test_pins_and_integer_containers_away_from_their_devices_are_counted_by_kind() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    of = pod("pin", pins="0-1")
    engine.commit(engine.plan_create(of, with_devices(container("pin", of), NVME_ON_1)))
    create(engine, "near", 2, NVME_ON_1)
    create(engine, "plain", 2)
    assert away_by_kind(DUAL_SOCKET, engine.ledger.entries.values()) == {Kind.ANNOTATED: 1}


# -- properties --------------------------------------------------------------------------------

PROPERTY = settings(max_examples=200, deadline=None)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, CPUSet, int, CPUSet]:
    """A machine, a free subset of its online CPUs, a count <= |free|, and a device hint."""
    name = draw(st.sampled_from(sorted(ALLOCATOR_SHAPES)))
    topology = ALLOCATOR_SHAPES[name]
    free = CPUSet(draw(st.sets(st.sampled_from(list(topology.online)))))
    count = draw(st.integers(min_value=0, max_value=len(free)))
    near = CPUSet(draw(st.sets(st.sampled_from(list(topology.numa_nodes)), max_size=2)))
    return name, free, count, near


@PROPERTY
@given(requests())
def test_a_hint_never_refuses_what_fits_and_takes_only_its_nodes_when_they_hold_it(
        request: tuple[str, CPUSet, int, CPUSet]) -> None:
    name, free, count, near = request
    topology, allocator = ALLOCATOR_SHAPES[name], ALLOCATORS[name]
    hinted = allocator.take(free, count, near=near)
    assert len(hinted) == count
    assert hinted <= free
    near_cpus = CPUSet.from_mask(sum(topology.cpus_of_numa(n).mask for n in near))
    if near and len(free & near_cpus) >= count:
        assert hinted <= near_cpus


@PROPERTY
@given(requests())
def test_without_a_hint_or_with_an_empty_one_the_choice_is_todays(
        request: tuple[str, CPUSet, int, CPUSet]) -> None:
    name, free, count, _ = request
    allocator = ALLOCATORS[name]
    assert allocator.choose(free, count, near=EMPTY) == allocator.choose(free, count)


@PROPERTY
@given(requests())
def test_within_its_nodes_a_hinted_choice_is_as_local_as_the_nodes_allow(
        request: tuple[str, CPUSet, int, CPUSet]) -> None:
    """Inside the hint the usual rules hold: if one of the hinted nodes holds the request, the
    CPUs lie in one NUMA node."""
    name, free, count, near = request
    topology, allocator = ALLOCATOR_SHAPES[name], ALLOCATORS[name]
    if not near or count == 0:
        return
    if any(len(free & topology.cpus_of_numa(n)) >= count for n in near):
        assert len(nodes_of(topology, allocator.take(free, count, near=near))) == 1
