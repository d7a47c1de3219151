"""The NUMA allocation options: packing vs spreading for requests no single node holds, keeping
whole NUMA nodes free (and how the options reach the allocator through the engine), and the
options as live settings.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.cpuset import CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import FullCoresUnavailableError, InsufficientCpusForReassignmentError
from cpuset_core.policy.exclusive import AllocationOptions, ExclusiveAllocator
from cpuset_core.policy.options import Spanning
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, LIVE_SETTINGS, Settings
from cpuset_core.topology import Topology
from tests.builders.facts import container, pod
from tests.unit.core.option_strategies import allocation_options
from tests.unit.core.topologies import DUAL_SOCKET, EPYC, NPS4, cpus
from tests.unit.core.whole_cores import WHOLE, splits_no_core

SPREAD = AllocationOptions(numa_spanning=Spanning.SPREAD)
KEEP_NODES = AllocationOptions(keep_free_numa_nodes=True)


def per_node(topology: Topology, taken: CPUSet) -> dict[int, int]:
    return {node: len(taken & topology.cpus_of_numa(node)) for node in topology.numa_nodes
            if taken & topology.cpus_of_numa(node)}


# -- NUMA packing vs spreading ---------------------------------------------------------------


def test_pack_fills_one_node_and_spread_divides_evenly() -> None:
    # NPS4: 32 CPUs per node, 4 nodes per socket. 40 CPUs need two nodes of socket 0.
    allocator = ExclusiveAllocator(NPS4)
    packed = allocator.choose(NPS4.online, 40)
    spread = allocator.choose(NPS4.online, 40, options=SPREAD)
    assert sorted(per_node(NPS4, packed.cpus).values()) == [8, 32]
    assert sorted(per_node(NPS4, spread.cpus).values()) == [20, 20]
    assert "spread evenly" in spread.domain
    for choice in (packed, spread):
        assert splits_no_core(NPS4, choice.cpus)
        assert len(per_node(NPS4, choice.cpus)) == 2


def test_spread_keeps_whole_cores_when_the_even_share_is_odd() -> None:
    # 36 CPUs over two nodes: 18 each would be 9 cores each: whole cores and even.
    # 38 CPUs: 19 each would split a core, so shares go by whole cores: 20 + 18.
    allocator = ExclusiveAllocator(NPS4)
    assert sorted(per_node(NPS4, allocator.take(NPS4.online, 36, options=SPREAD)).values()) \
        == [18, 18]
    taken = allocator.take(NPS4.online, 38, options=SPREAD)
    assert sorted(per_node(NPS4, taken).values()) == [18, 20]
    assert splits_no_core(NPS4, taken)


def test_spread_caps_a_share_at_what_the_node_has_free() -> None:
    free = NPS4.online - NPS4.cpus_of_numa(0) | cpus("0-3,128-131")  # node 0: 8 free
    taken = ExclusiveAllocator(NPS4).take(free, 40, options=SPREAD)
    assert len(taken) == 40
    assert all(n <= len(free & NPS4.cpus_of_numa(node))
               for node, n in per_node(NPS4, taken).items())


@settings(max_examples=300, deadline=None)
@given(count=st.integers(33, 128), used=st.sets(st.integers(0, 255), max_size=60))
def test_spread_uses_as_few_nodes_as_pack_and_gives_the_same_count(
        count: int, used: set[int]) -> None:
    allocator = ExclusiveAllocator(NPS4)
    free = NPS4.online - CPUSet(used)
    packed = allocator.take(free, count)
    spread = allocator.take(free, count, options=SPREAD)
    assert len(spread) == count
    assert spread <= free
    assert NPS4.numa_nodes_of(spread) == NPS4.numa_nodes_of(packed)  # same nodes, never more

    def gap(taken: CPUSet) -> int:
        shares = per_node(NPS4, taken).values()
        return max(shares) - min(shares)

    assert gap(spread) <= gap(packed)


# -- keeping free NUMA nodes intact ----------------------------------------------------------


def test_an_l3_group_in_a_fuller_node_is_preferred_to_an_equal_one_in_an_emptier_node() -> None:
    # EPYC: node 0 = L3 {0-3,16-19} + {4-7,20-23}; node 1 = L3 {8-11,24-27} + {12-15,28-31}.
    # The first L3 group of each node has 6 free CPUs (equally tight, node 0's comes first);
    # node 1's other group is nearly full, node 0's is empty: node 1 is the fuller node, so
    # taking from it leaves node 0 with room for a node-sized request later.
    free = EPYC.online - cpus("0,16") - cpus("8,24,12-14,28-30")
    taken = ExclusiveAllocator(EPYC).take(free, 4)
    assert taken <= EPYC.cpus_of_numa(1)


def test_keep_free_numa_nodes_gives_up_l3_confinement_to_leave_a_node_whole() -> None:
    # Node 0: 4 free CPUs in each of its L3 groups (8 free in all); node 1 wholly free.
    free = EPYC.online - cpus("0-1,16-17,4-5,20-21")
    default = ExclusiveAllocator(EPYC).take(free, 6)
    kept = ExclusiveAllocator(EPYC).take(free, 6, options=KEEP_NODES)
    assert default <= EPYC.cpus_of_numa(1)  # L3-confined, in the free node
    assert kept <= EPYC.cpus_of_numa(0)  # node-confined across L3 groups; node 1 stays whole
    assert splits_no_core(EPYC, kept)


def test_settings_reach_the_allocator_through_the_engine() -> None:
    free_node = Settings(allocation=KEEP_NODES)
    engine = CpusetEngine(EPYC, free_node)
    pinned = pod("pin", annotations={DEFAULT_PIN_ANNOTATION: "0-1,16-17,4-5,20-21"})
    engine.commit(engine.plan_create(pinned, container("pin", pinned)))
    p = pod("six")
    plan = engine.plan_create(p, container("c", p, cpu_limit=6))
    assert plan.placement is not None
    assert plan.placement.cpus <= EPYC.cpus_of_numa(0)


def test_full_core_mode_re_places_a_half_core_container_when_it_is_resized() -> None:
    # Found by the model-based test: a 1-CPU container placed before whole-core mode, grown to
    # 2 in whole-core mode, must not keep its half core and add a whole one.
    engine = CpusetEngine(DUAL_SOCKET)
    p = pod("old")
    engine.commit(engine.plan_create(p, container("c", p, cpu_limit=1)))
    engine.reconfigure(Settings(allocation=WHOLE))
    grown = engine.plan_resize(p, container("c", p, cpu_limit=2))
    assert grown.placement is not None
    assert len(grown.placement.cpus) == 2
    assert splits_no_core(DUAL_SOCKET, grown.placement.cpus)
    assert "re-placed on whole cores" in grown.reason
    with pytest.raises(FullCoresUnavailableError, match="3 is not a multiple"):
        engine.plan_resize(p, container("c", p, cpu_limit=3))


def test_a_pin_refused_because_its_victim_cannot_have_whole_cores_says_so() -> None:
    # Found in review: the counts alone ("needs 1, only 14 free") hid the real reason.
    engine = CpusetEngine(DUAL_SOCKET)
    p = pod("db")
    engine.commit(engine.plan_create(p, container("db", p, cpu_limit=1)))
    engine.reconfigure(Settings(allocation=WHOLE))
    held = engine.placement("db")
    assert held is not None
    pin = pod("pin", annotations={DEFAULT_PIN_ANNOTATION: str(held.cpus.first())})
    with pytest.raises(InsufficientCpusForReassignmentError) as caught:
        engine.plan_create(pin, container("pin", pin))
    assert str(caught.value).endswith(
        "ns/db/main, which cannot be moved onto whole cores (full_physical_cores): ns/db/main: "
        "1 is not a multiple of the 2 threads per core")


def test_a_refused_growth_names_the_size_asked() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(allocation=WHOLE))
    p = pod("grow")
    engine.commit(engine.plan_create(p, container("c", p, cpu_limit=2)))
    with pytest.raises(FullCoresUnavailableError) as caught:
        engine.plan_resize(p, container("c", p, cpu_limit=5))
    assert caught.value.requested == 5
    assert "needs 5 exclusive CPU(s)" in str(caught.value)


# -- the options as settings -------------------------------------------------------------------


@given(options=allocation_options())
def test_every_allocation_option_may_change_on_a_running_engine(
        options: AllocationOptions) -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    engine.reconfigure(Settings(allocation=options))
    assert engine.settings.allocation == options


def test_settings_name_each_allocation_option_under_allocation() -> None:
    changed = Settings(allocation=SPREAD, min_shared_pool=1)
    assert Settings().differences(changed) == ["allocation.numa_spanning", "min_shared_pool"]
    assert set(Settings().by_name()) >= LIVE_SETTINGS
    assert {name for name in LIVE_SETTINGS if name.startswith("allocation.")} == {
        "allocation.full_physical_cores", "allocation.numa_spanning",
        "allocation.keep_free_numa_nodes", "allocation.alignment", "allocation.alignment_scope",
        "allocation.bind_memory"}


def test_spanning_must_be_a_spanning_value() -> None:
    with pytest.raises(ValueError, match="numa_spanning must be a Spanning, got 'spread'"):
        AllocationOptions(numa_spanning="spread")  # type: ignore[arg-type]
