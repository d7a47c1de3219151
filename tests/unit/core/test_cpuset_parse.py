"""Table tests for ``CPUSet`` and the Linux list format: what parses, how it formats, and where
each rejected text fails.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY, CPUSet
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
