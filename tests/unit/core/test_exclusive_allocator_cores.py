"""The exclusive allocator and cores: whole cores before orphans, orphans before split cores,
and the edges (determinism, too small a free set, no SMT, offline siblings).
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.topology import Topology
from tests.unit.core.exclusive_allocators import ALLOCATORS, DUAL, is_whole_cores
from tests.unit.core.topologies import (
    ALLOCATOR_SHAPES,
    DUAL_SOCKET,
    EPYC,
    FIRST_SIBLING_OFFLINE,
    INTEL,
    NO_SMT,
    NPS4,
    OFFLINE_ISO,
    cpus,
)

# -- whole cores and orphans (DUAL_SOCKET: node 0 = cores {0,8} {1,9} {2,10} {3,11}) ----------


@pytest.mark.parametrize(("topology", "pair"), [
    (DUAL_SOCKET, "0,8"), (EPYC, "0,16"), (INTEL, "0,56"), (NPS4, "0,128"),
], ids=["dual-socket", "epyc", "intel-112", "nps4-256"])
def test_pair_gets_one_whole_core(topology: Topology, pair: str) -> None:
    taken = ExclusiveAllocator(topology).take(topology.online, 2)
    assert taken == cpus(pair)
    assert taken == topology.core_cpus(taken.first())


def test_pair_gets_a_whole_core_even_when_a_node_has_an_orphan() -> None:
    free = DUAL_SOCKET.online - cpus("1")  # 9 is an orphan
    taken = DUAL.take(free, 2, exclusive=cpus("1"))
    assert is_whole_cores(DUAL_SOCKET, taken)
    assert 9 not in taken


def test_three_cpus_take_a_whole_core_and_an_orphan_whose_mate_is_not_exclusive() -> None:
    # 1 is pinned (not exclusive), 2 is exclusive: orphans 9 (beside a pin) and 10 (beside
    # another exclusive owner). The orphan beside the pin wins.
    free = DUAL_SOCKET.online - cpus("1-2")
    assert DUAL.take(free, 3, exclusive=cpus("2")) == cpus("0,8,9")


def test_three_cpus_take_an_orphan_beside_an_exclusive_owner_before_splitting_a_core() -> None:
    free = DUAL_SOCKET.online - cpus("1")
    assert DUAL.take(free, 3, exclusive=cpus("1")) == cpus("0,8,9")


def test_three_cpus_split_a_whole_core_only_when_no_orphan_exists() -> None:
    taken = DUAL.take(DUAL_SOCKET.online, 3)
    assert taken == cpus("0-1,8")
    assert not is_whole_cores(DUAL_SOCKET, taken)


def test_three_cpus_go_to_the_node_whose_orphan_completes_them_instead_of_splitting() -> None:
    # Node 0 is all whole cores (a take would split one); node 1 has orphan 12 (4 is pinned).
    free = DUAL_SOCKET.online - cpus("4")
    assert DUAL.take(free, 3) == cpus("5,12-13")


@pytest.mark.parametrize("mate_exclusive", [True, False], ids=["mate-exclusive", "mate-pinned"])
def test_four_cpus_get_two_whole_cores_even_when_orphans_exist(mate_exclusive: bool) -> None:
    free = DUAL_SOCKET.online - cpus("1")
    taken = DUAL.take(free, 4, exclusive=cpus("1") if mate_exclusive else EMPTY)
    assert taken == cpus("0,2,8,10")
    assert is_whole_cores(DUAL_SOCKET, taken)


def test_five_cpus_get_two_whole_cores_and_one_orphan() -> None:
    free = DUAL_SOCKET.online - cpus("1")
    assert DUAL.take(free, 5, exclusive=cpus("1")) == cpus("0,2,8-10")


def test_pair_avoids_orphans_beside_other_exclusive_owners_in_a_fuller_node() -> None:
    # Node 0 has only orphans 8 and 9 whose mates 0 and 1 are exclusive; node 1 is empty.
    free = DUAL_SOCKET.online - cpus("0-3,10-11")
    assert DUAL.take(free, 2, exclusive=cpus("0-3,10-11")) == cpus("4,12")


def test_pair_gets_a_whole_core_rather_than_two_orphans_beside_pins_in_a_fuller_node() -> None:
    """Regression: two orphans on two cores used to score like one whole core (no split, no
    exclusive sibling), and best fit then chose the fuller node."""
    free = DUAL_SOCKET.online - cpus("0-3,10-11")  # node 0: orphans 8, 9 (mates pinned)
    assert DUAL.take(free, 2) == cpus("4,12")


# -- determinism, edges, odd machines ----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALLOCATOR_SHAPES))
@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_same_inputs_give_the_same_cpus_even_from_a_rebuilt_allocator(name: str,
                                                                     count: int) -> None:
    topology = ALLOCATOR_SHAPES[name]
    free = topology.online - CPUSet(list(topology.online)[::4])
    exclusive = topology.online - free
    first = ALLOCATORS[name].take(free, count, exclusive=exclusive)
    assert ALLOCATORS[name].take(free, count, exclusive=exclusive) == first
    assert ExclusiveAllocator(topology).take(free, count, exclusive=exclusive) == first


def test_too_small_a_free_set_raises_value_error() -> None:
    with pytest.raises(ValueError, match="4 CPUs requested but only 3 free"):
        DUAL.take(cpus("0-2"), 4)


@pytest.mark.parametrize("count", [0, -1])
def test_no_cpus_requested_gives_the_empty_set(count: int) -> None:
    assert DUAL.take(DUAL_SOCKET.online, count) == EMPTY
    assert DUAL.take(EMPTY, count) == EMPTY


def test_request_for_every_free_cpu_takes_them_all() -> None:
    free = DUAL_SOCKET.online - cpus("3,6")
    assert DUAL.take(free, len(free)) == free


def test_machine_without_smt_takes_lowest_cpus_of_one_node() -> None:
    allocator = ExclusiveAllocator(NO_SMT)
    assert allocator.take(NO_SMT.online, 3) == cpus("0-2")
    assert allocator.take(NO_SMT.online - cpus("0-1"), 3) == cpus("4-6")
    assert allocator.take(NO_SMT.online, 5) == cpus("0-4")


def test_core_with_an_offline_sibling_counts_as_whole() -> None:
    allocator = ExclusiveAllocator(OFFLINE_ISO)  # cores {0,4} {1,5} {2,6} {3}
    assert allocator.take(cpus("0,3-4"), 1) == cpus("3")
    assert allocator.take(OFFLINE_ISO.online, 3) == cpus("0,3-4")


def test_pair_is_not_split_because_a_single_thread_core_comes_first() -> None:
    """Regression: whole cores were taken first-fit in core order, so the single-thread core
    {0} took half of the pair and the other half split {1,5}."""
    allocator = ExclusiveAllocator(FIRST_SIBLING_OFFLINE)  # cores {0} {1,5} {2,6} {3,7}
    assert allocator.take(FIRST_SIBLING_OFFLINE.online, 2) == cpus("1,5")
    assert allocator.take(FIRST_SIBLING_OFFLINE.online, 3) == cpus("0-1,5")
