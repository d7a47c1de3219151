"""Table tests for ``CPUSet`` and the Linux list format: what parses, how it formats, and where
each rejected text fails.
"""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import CpuListSyntaxError, CpusetError
from tests.unit.core.cpulist_corpus import ACCEPTED, REJECTED

# -- parse: accepted inputs ----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), ACCEPTED)
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


@pytest.mark.parametrize(("text", "position", "problem"), REJECTED)
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
