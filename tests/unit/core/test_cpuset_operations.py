"""Table tests for ``CPUSet`` as a set: the algebra, size, truth, membership, iteration, the
extremes and the subset relations.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY, CPUSet

# -- set algebra ---------------------------------------------------------------------------------

A = CPUSet.parse("0-5")


B = CPUSet.parse("4-9")


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(A | B, "0-9", id="union"),
        pytest.param(A & B, "4-5", id="intersection"),
        pytest.param(A - B, "0-3", id="difference"),
        pytest.param(B - A, "6-9", id="reverse difference"),
        pytest.param(A ^ B, "0-3,6-9", id="symmetric difference"),
        pytest.param(A.union(B), "0-9", id="union method"),
        pytest.param(A.intersection(B), "4-5", id="intersection method"),
        pytest.param(A.difference(B), "0-3", id="difference method"),
        pytest.param(A | EMPTY, "0-5", id="union with empty"),
        pytest.param(A & EMPTY, "", id="intersection with empty"),
        pytest.param(A - A, "", id="difference with itself"),
        pytest.param(A ^ A, "", id="xor with itself"),
        pytest.param(CPUSet.union_of([A, B, CPUSet([20])]), "0-9,20", id="union of many"),
        pytest.param(CPUSet.union_of([]), "", id="union of none"),
    ],
)
def test_set_algebra_gives_expected_result(result: CPUSet, expected: str) -> None:
    assert result.format() == expected


def test_set_algebra_leaves_operands_unchanged() -> None:
    a, b = CPUSet.parse("0-5"), CPUSet.parse("4-9")
    _ = a | b, a & b, a - b, a ^ b
    assert a.format() == "0-5"
    assert b.format() == "4-9"


# -- size, truth, membership, iteration ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "length"),
    [("", 0), ("0", 1), ("0-3,8", 5), ("0-8191", 8192), ("8191", 1)],
)
def test_len_counts_members(text: str, length: int) -> None:
    assert len(CPUSet.parse(text, allow_empty=True)) == length


def test_bool_is_false_only_for_the_empty_set() -> None:
    assert not EMPTY
    assert not CPUSet()
    assert CPUSet([0])
    assert CPUSet([8191])


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        pytest.param(0, True, id="first member"),
        pytest.param(3, True, id="member inside a range"),
        pytest.param(8, True, id="last member"),
        pytest.param(4, False, id="gap"),
        pytest.param(9, False, id="past the end"),
        pytest.param(-1, False, id="negative"),
        pytest.param(10**30, False, id="huge int"),
        pytest.param("3", False, id="string"),
        pytest.param(3.0, False, id="float"),
        pytest.param(None, False, id="none"),
    ],
)
def test_contains_answers_membership(member: object, expected: bool) -> None:
    assert (member in CPUSet.parse("0-3,8")) is expected


def test_iteration_is_in_ascending_order() -> None:
    assert list(CPUSet([9, 3, 8191, 0, 4])) == [0, 3, 4, 9, 8191]
    assert list(EMPTY) == []


def test_first_and_last_are_the_extreme_members() -> None:
    s = CPUSet.parse("3-5,9")
    assert s.first() == 3
    assert s.last() == 9
    assert CPUSet([8191]).first() == 8191


@pytest.mark.parametrize("method", [CPUSet.first, CPUSet.last])
def test_first_and_last_of_the_empty_set_raise(method: object) -> None:
    assert callable(method)
    with pytest.raises(ValueError, match="empty CPUSet"):
        method(EMPTY)


@pytest.mark.parametrize(
    ("text", "count", "expected"),
    [
        pytest.param("3-5,9", 2, "3-4", id="fewer than all"),
        pytest.param("3-5,9", 4, "3-5,9", id="exactly all"),
        pytest.param("3-5,9", 100, "3-5,9", id="more than all"),
        pytest.param("3-5,9", 0, "", id="none"),
        pytest.param("", 3, "", id="from the empty set"),
        pytest.param("8,1,5", 2, "1,5", id="skips gaps"),
    ],
)
def test_lowest_takes_the_smallest_members(text: str, count: int, expected: str) -> None:
    assert CPUSet.parse(text, allow_empty=True).lowest(count).format() == expected


@pytest.mark.parametrize(
    ("left", "right", "subset", "superset", "disjoint"),
    [
        pytest.param("0-3", "0-7", True, False, False, id="proper subset"),
        pytest.param("0-7", "0-3", False, True, False, id="proper superset"),
        pytest.param("0-3", "0-3", True, True, False, id="equal sets"),
        pytest.param("0-3", "4-7", False, False, True, id="disjoint sets"),
        pytest.param("0-4", "4-7", False, False, False, id="overlapping sets"),
        pytest.param("", "0-3", True, False, True, id="empty left"),
        pytest.param("0-3", "", False, True, True, id="empty right"),
        pytest.param("", "", True, True, True, id="both empty"),
    ],
)
def test_subset_superset_and_disjoint_relations(
    left: str, right: str, subset: bool, superset: bool, disjoint: bool
) -> None:
    a = CPUSet.parse(left, allow_empty=True)
    b = CPUSet.parse(right, allow_empty=True)
    assert a.issubset(b) is subset
    assert (a <= b) is subset
    assert a.issuperset(b) is superset
    assert (a >= b) is superset
    assert a.isdisjoint(b) is disjoint
    assert b.isdisjoint(a) is disjoint
