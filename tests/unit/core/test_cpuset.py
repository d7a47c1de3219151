"""Table tests for ``CPUSet``: the Linux list format (parse and format) and the set value."""

from __future__ import annotations

import copy
import pickle

import pytest

from cpuset_core.cpuset import EMPTY, MAX_ID, CPUSet
from cpuset_core.errors import CpuListSyntaxError, CpusetError

FIVE_THOUSAND_DIGITS = "1" + "0" * 4999

# -- parse: accepted inputs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("0", {0}, id="single id zero"),
        pytest.param("7", {7}, id="single id"),
        pytest.param("0-3", {0, 1, 2, 3}, id="range"),
        pytest.param("5-5", {5}, id="one-element range"),
        pytest.param("0,2-3,8", {0, 2, 3, 8}, id="ids and ranges"),
        pytest.param("3,0-2", {0, 1, 2, 3}, id="out of order"),
        pytest.param("1,1,1", {1}, id="duplicate ids merge"),
        pytest.param("0-4,2-6", set(range(7)), id="overlapping ranges merge"),
        pytest.param("0-7,2-3", set(range(8)), id="contained range merges"),
        pytest.param("0-3,4-7", set(range(8)), id="adjacent ranges merge"),
        pytest.param("0-3\n", {0, 1, 2, 3}, id="trailing newline as in sysfs"),
        pytest.param("  0-3\n", {0, 1, 2, 3}, id="surrounding spaces and newline"),
        pytest.param("\t1,3 \r\n", {1, 3}, id="tabs and CRLF around the text"),
        pytest.param("007", {7}, id="leading zeros"),
        pytest.param("00-03", {0, 1, 2, 3}, id="leading zeros in a range"),
        pytest.param("0000", {0}, id="all zeros"),
        pytest.param("00008191", {8191}, id="leading zeros before the max id"),
        pytest.param("8191", {8191}, id="max id"),
        pytest.param("8190-8191", {8190, 8191}, id="range ending at the max id"),
        pytest.param("0-8191", set(range(8192)), id="the whole id space"),
    ],
)
def test_parse_accepts_valid_list(text: str, expected: set[int]) -> None:
    parsed = CPUSet.parse(text)
    assert set(parsed) == expected
    assert parsed == CPUSet(expected)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("3,0-2", "0-3", id="sorted and collapsed"),
        pytest.param("1,3,5", "1,3,5", id="isolated ids stay apart"),
        pytest.param("4,5", "4-5", id="a run of two becomes a range"),
        pytest.param("0,1,2,4,5,7", "0-2,4-5,7", id="mixed runs"),
        pytest.param("5-5", "5", id="one-element range becomes an id"),
        pytest.param("007,00-01", "0-1,7", id="leading zeros dropped"),
        pytest.param(" 2-3,0-1\n", "0-3", id="whitespace dropped and ranges joined"),
        pytest.param("8191,0", "0,8191", id="extremes"),
    ],
)
def test_format_is_canonical(text: str, canonical: str) -> None:
    parsed = CPUSet.parse(text)
    assert parsed.format() == canonical
    assert str(parsed) == canonical
    assert CPUSet.parse(canonical) == parsed


@pytest.mark.parametrize("text", ["", "   ", "\n", " \t\n"])
def test_parse_allows_empty_text_only_when_asked(text: str) -> None:
    assert CPUSet.parse(text, allow_empty=True) == EMPTY
    with pytest.raises(CpuListSyntaxError):
        CPUSet.parse(text)


@pytest.mark.parametrize("text", [",", "0,,2", "1,", "-1"])
def test_allow_empty_does_not_relax_the_grammar(text: str) -> None:
    with pytest.raises(CpuListSyntaxError):
        CPUSet.parse(text, allow_empty=True)


# -- parse: rejected inputs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "position", "problem"),
    [
        pytest.param("", 0, "empty list", id="empty input"),
        pytest.param("   ", 0, "empty list", id="whitespace only"),
        pytest.param("\n", 0, "empty list", id="newline only"),
        pytest.param(",", 0, "empty element", id="lone comma"),
        pytest.param("0,,2", 2, "empty element", id="empty element in the middle"),
        pytest.param("1,", 2, "empty element", id="trailing comma"),
        pytest.param(",1", 0, "empty element", id="leading comma"),
        pytest.param(" 1,\n", 3, "empty element", id="trailing comma before whitespace"),
        pytest.param("3-1", 0, "reversed range 3-1", id="reversed range"),
        pytest.param("0,7-2", 2, "reversed range 7-2", id="reversed range after an element"),
        pytest.param("-1", 0, "negative id or missing range start", id="negative id"),
        pytest.param("0,-1", 2, "negative id or missing range start", id="negative id later"),
        pytest.param("a", 0, "unexpected character 'a' (expected a digit)", id="letter"),
        pytest.param("0-x", 2, "unexpected character 'x' (expected a digit)",
                     id="letter as range end"),
        pytest.param("1a", 1, "unexpected character 'a' (expected ',' after an element)",
                     id="letter after an id"),
        pytest.param("0x3", 1, "unexpected character 'x'", id="hex prefix"),
        pytest.param("+1", 0, "unexpected character '+'", id="plus sign"),
        pytest.param("\u0663", 0, "unexpected character", id="non-ascii digit"),
        pytest.param("0, 2", 2, "whitespace inside the list", id="space after comma"),
        pytest.param("0 ,2", 1, "whitespace inside the list", id="space before comma"),
        pytest.param("0 -2", 1, "whitespace inside the list", id="space before dash"),
        pytest.param("0- 2", 2, "whitespace inside the list", id="space after dash"),
        pytest.param("0\n1", 1, "whitespace inside the list", id="newline between ids"),
        pytest.param("8192", 0, "id 8192 is larger than the maximum 8191", id="id one past max"),
        pytest.param("0-8192", 2, "id 8192 is larger than the maximum 8191",
                     id="range end one past max"),
        pytest.param("99999999999999999999", 0, "is larger than the maximum 8191",
                     id="twenty-digit id"),
        pytest.param(FIVE_THOUSAND_DIGITS, 0, "is larger than the maximum 8191",
                     id="five-thousand-digit id"),
        pytest.param("1-", 2, "empty range end", id="missing range end"),
        pytest.param("1-,2", 2, "empty range end", id="missing range end before comma"),
        pytest.param("1--2", 2, "unexpected character '-' (expected a digit)",
                     id="double dash"),
        pytest.param("0-1-2", 3, "unexpected character '-' (expected ',' after an element)",
                     id="double range"),
        pytest.param("0-7:2/4", 3, "unexpected character ':'", id="stride syntax"),
    ],
)
def test_parse_rejects_invalid_list_at_exact_position(
    text: str, position: int, problem: str
) -> None:
    with pytest.raises(CpuListSyntaxError) as caught:
        CPUSet.parse(text)
    error = caught.value
    assert error.position == position
    assert problem in error.problem
    assert error.text == text
    assert repr(text) in str(error)
    assert f"at position {position}" in str(error)


def test_syntax_error_is_a_value_error_and_a_cpuset_error() -> None:
    with pytest.raises(CpuListSyntaxError) as caught:
        CPUSet.parse("x")
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, CpusetError)
    assert caught.value.reason == "cpu-list-syntax"


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


# -- identity, immutability, pickling ------------------------------------------------------------


def test_equal_sets_are_equal_and_hash_alike() -> None:
    a = CPUSet([1, 2])
    b = CPUSet.parse("1-2")
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, CPUSet.from_mask(0b110)}) == 1


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(CPUSet([1]), id="different set"),
        pytest.param(0b110, id="its mask as int"),
        pytest.param({1, 2}, id="python set"),
        pytest.param("1-2", id="its text"),
    ],
)
def test_set_is_not_equal_to_other_values(other: object) -> None:
    assert CPUSet([1, 2]) != other


def test_setting_an_attribute_raises() -> None:
    s = CPUSet([1])
    with pytest.raises(AttributeError, match="immutable"):
        s._mask = 0
    with pytest.raises(AttributeError, match="immutable"):
        s.other = 1
    assert s == CPUSet([1])


def test_deleting_an_attribute_raises() -> None:
    s = CPUSet([1])
    with pytest.raises(AttributeError):
        del s._mask
    assert s == CPUSet([1])


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("text", ["", "0", "0-3,8", "0-8191", "8191"])
def test_pickle_round_trip_preserves_the_set(protocol: int, text: str) -> None:
    s = CPUSet.parse(text, allow_empty=True)
    restored = pickle.loads(pickle.dumps(s, protocol=protocol))  # noqa: S301
    assert isinstance(restored, CPUSet)
    assert restored == s
    assert restored.format() == s.format()


def test_copy_and_deepcopy_preserve_the_set() -> None:
    s = CPUSet.parse("0-3,8")
    assert copy.copy(s) == s
    assert copy.deepcopy(s) == s


# -- constructors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        pytest.param(0, 3, "0-3", id="small range"),
        pytest.param(5, 5, "5", id="single id"),
        pytest.param(4, 3, "", id="reversed gives empty"),
        pytest.param(8190, 8191, "8190-8191", id="ending at the max id"),
        pytest.param(0, 8191, "0-8191", id="whole id space"),
    ],
)
def test_range_builds_an_inclusive_range(first: int, last: int, expected: str) -> None:
    assert CPUSet.range(first, last).format() == expected


def test_range_past_the_max_id_raises() -> None:
    with pytest.raises(ValueError, match="outside the id range"):
        CPUSet.range(0, MAX_ID + 1)


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        pytest.param(0, "", id="zero"),
        pytest.param(0b1011, "0-1,3", id="small mask"),
        pytest.param(1 << 8191, "8191", id="top bit"),
        pytest.param((1 << 8192) - 1, "0-8191", id="all bits"),
    ],
)
def test_from_mask_reads_bits_as_members(mask: int, expected: str) -> None:
    s = CPUSet.from_mask(mask)
    assert s.format() == expected
    assert s.mask == mask


@pytest.mark.parametrize(
    "mask",
    [
        pytest.param(-1, id="negative"),
        pytest.param(1 << 8192, id="one bit past the max id"),
        pytest.param(1 << 100_000, id="huge"),
    ],
)
def test_from_mask_rejects_out_of_range_masks(mask: int) -> None:
    with pytest.raises(ValueError, match="outside the id range"):
        CPUSet.from_mask(mask)


@pytest.mark.parametrize(
    "ids",
    [
        pytest.param([-1], id="negative"),
        pytest.param([0, 8192], id="one past the max id"),
        pytest.param([10**20], id="huge"),
    ],
)
def test_constructor_rejects_out_of_range_ids(ids: list[int]) -> None:
    with pytest.raises(ValueError, match=r"outside 0\.\.8191"):
        CPUSet(ids)


def test_constructor_accepts_any_iterable_of_ids() -> None:
    assert CPUSet(i * 2 for i in range(3)) == CPUSet.parse("0,2,4")
    assert CPUSet([3, 3, 1]) == CPUSet.parse("1,3")
    assert CPUSet([MAX_ID]).format() == "8191"
    assert CPUSet() == EMPTY


def test_format_of_the_empty_set_is_the_empty_string() -> None:
    assert EMPTY.format() == ""
    assert CPUSet().format() == ""
    assert str(EMPTY) == ""
    assert CPUSet.parse(EMPTY.format(), allow_empty=True) == EMPTY


def test_repr_shows_the_canonical_list() -> None:
    assert repr(CPUSet([0, 1, 2, 4])) == "CPUSet('0-2,4')"
    assert repr(EMPTY) == "CPUSet('')"
