"""The exclusive allocator's topology fit: one NUMA node and the best-fitting one, L3 groups,
spanning the fewest nodes of one socket, and a preferred node.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_core.policy.exclusive import ExclusiveAllocator
from tests.unit.core.exclusive_allocators import DUAL, EPYC_ALLOC, is_whole_cores, nodes_of
from tests.unit.core.topologies import DUAL_SOCKET, EPYC, NPS4, cpus

NPS4_ALLOC = ExclusiveAllocator(NPS4)


# -- NUMA fit and best fit ---------------------------------------------------------------------


def test_request_that_fits_one_node_stays_in_one_node() -> None:
    taken = DUAL.take(DUAL_SOCKET.online, 6)
    assert taken == cpus("0-2,8-10")
    assert nodes_of(DUAL_SOCKET, taken) == cpus("0")


@pytest.mark.parametrize(("used", "expected"), [
    ("0-1,8-9", "2-3,10-11"),  # node 0 is fuller: it is the best fit
    ("4-5,12-13", "6-7,14-15"),  # node 1 is fuller: position does not decide
])
def test_request_goes_to_the_fullest_node_that_still_fits(used: str, expected: str) -> None:
    free = DUAL_SOCKET.online - cpus(used)
    assert DUAL.take(free, 4, exclusive=cpus(used)) == cpus(expected)


def test_request_skips_a_fuller_node_that_cannot_hold_it() -> None:
    free = DUAL_SOCKET.online - cpus("0-1,8-9")  # node 0 has 4 free
    assert nodes_of(DUAL_SOCKET, DUAL.take(free, 6)) == cpus("1")


def test_nodes_with_equal_room_tie_break_on_the_lower_node() -> None:
    assert nodes_of(DUAL_SOCKET, DUAL.take(DUAL_SOCKET.online, 8)) == cpus("0")


# -- L3 groups (EPYC: 0-3,16-19 | 4-7,20-23 | 8-11,24-27 | 12-15,28-31) ------------------------


def test_request_that_fits_one_l3_group_stays_in_it() -> None:
    assert EPYC_ALLOC.take(EPYC.online, 8) == cpus("0-3,16-19")


def test_request_goes_to_the_fullest_l3_group_that_fits() -> None:
    free = EPYC.online - cpus("0,16")
    assert EPYC_ALLOC.take(free, 4, exclusive=cpus("0,16")) == cpus("1-2,17-18")


def test_request_larger_than_the_free_part_of_an_l3_group_uses_another_group() -> None:
    free = EPYC.online - cpus("0,16")
    assert EPYC_ALLOC.take(free, 8, exclusive=cpus("0,16")) == cpus("4-7,20-23")


def test_request_larger_than_any_l3_group_stays_in_one_node() -> None:
    taken = EPYC_ALLOC.take(EPYC.online, 10)
    assert taken == cpus("0-4,16-20")
    assert nodes_of(EPYC, taken) == cpus("0")


# -- spanning nodes (NPS4: node k = 16k..16k+15 and 128+16k..; nodes 0-3 = socket 0) -----------


def node_cpus(*nodes: int) -> CPUSet:
    return CPUSet.union_of(NPS4.cpus_of_numa(n) for n in nodes)


def test_request_bigger_than_a_node_spans_the_fewest_nodes_of_one_socket() -> None:
    taken = NPS4_ALLOC.take(NPS4.online, 40)
    assert taken == cpus("0-19,128-147")
    assert nodes_of(NPS4, taken) == cpus("0-1")
    assert is_whole_cores(NPS4, taken)


def test_spanning_takes_the_roomiest_nodes_and_the_tightest_one_for_the_rest() -> None:
    free = NPS4.online - (node_cpus(0) - cpus("0-4,128-132"))  # node 0 keeps 10 free
    taken = NPS4_ALLOC.take(free, 40)
    assert len(taken) == 40
    assert nodes_of(NPS4, taken) == cpus("0-1")


def test_spanning_stays_in_the_fuller_socket_when_both_fit() -> None:
    free = NPS4.online - cpus("0-27")  # socket 0 keeps 100 free, socket 1 has 128
    taken = NPS4_ALLOC.take(free, 40)
    assert nodes_of(NPS4, taken) <= cpus("0-3")


def test_spanning_uses_the_only_socket_that_fits() -> None:
    free = NPS4.online - cpus("0-27")  # socket 0 keeps 100 free
    taken = NPS4_ALLOC.take(free, 110)
    assert len(taken) == 110
    assert nodes_of(NPS4, taken) == cpus("4-7")


def test_request_bigger_than_any_socket_spans_the_fewest_nodes_of_the_machine() -> None:
    taken = NPS4_ALLOC.take(NPS4.online, 200)
    assert len(taken) == 200
    assert len(nodes_of(NPS4, taken)) == 7  # ceil(200 / 32)


def test_request_bigger_than_a_socket_on_a_two_node_machine_spans_both() -> None:
    assert DUAL.take(DUAL_SOCKET.online, 10) == cpus("0-4,8-12")


# -- prefer_numa -------------------------------------------------------------------------------


def test_preferred_node_is_used_when_it_fits() -> None:
    assert DUAL.take(DUAL_SOCKET.online, 2, prefer_numa=cpus("1")) == cpus("4,12")


def test_preferred_node_wins_over_a_better_fitting_one() -> None:
    free = DUAL_SOCKET.online - cpus("0-1,8-9")
    assert DUAL.take(free, 2) == cpus("2,10")
    assert DUAL.take(free, 2, prefer_numa=cpus("1")) == cpus("4,12")


def test_preferred_node_that_cannot_hold_the_request_is_passed_over() -> None:
    free = DUAL_SOCKET.online - cpus("4-7,12-14")  # node 1 keeps only CPU 15
    assert nodes_of(DUAL_SOCKET, DUAL.take(free, 2, prefer_numa=cpus("1"))) == cpus("0")


def test_preferred_node_still_prefers_its_l3_groups() -> None:
    assert EPYC_ALLOC.take(EPYC.online, 4, prefer_numa=cpus("1")) == cpus("8-9,24-25")
