"""Property tests for ``CPUSet``: the list format round-trips and the algebra is ``set``'s."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.cpuset import MAX_ID, CPUSet
from cpuset_core.errors import CpuListSyntaxError

PROPERTY = settings(max_examples=300, deadline=None)

ids = st.integers(min_value=0, max_value=MAX_ID)
# Small ids collide and form runs often; the full range exercises the high bits.
id_sets = st.one_of(
    st.frozensets(st.integers(min_value=0, max_value=40), max_size=30),
    st.frozensets(ids, max_size=60),
)


@st.composite
def ranges(draw: st.DrawFn) -> tuple[int, int]:
    a = draw(ids)
    b = draw(st.integers(min_value=a, max_value=min(MAX_ID, a + draw(st.sampled_from([0, 3, 64])))))
    return a, b


def render(a: int, b: int, leading_zeros: int) -> str:
    pad = "0" * leading_zeros
    return f"{pad}{a}" if a == b else f"{pad}{a}-{pad}{b}"


@PROPERTY
@given(id_sets)
def test_parse_of_format_returns_the_same_set(members: frozenset[int]) -> None:
    s = CPUSet(members)
    assert CPUSet.parse(s.format(), allow_empty=True) == s
    if members:
        assert CPUSet.parse(s.format()) == s


@PROPERTY
@given(id_sets)
def test_format_is_canonical(members: frozenset[int]) -> None:
    text = CPUSet(members).format()
    assert CPUSet.parse(text, allow_empty=True).format() == text


@PROPERTY
@given(
    st.lists(st.tuples(ranges(), st.integers(min_value=0, max_value=2)), min_size=1, max_size=20),
    st.randoms(use_true_random=False),
)
def test_parse_of_ranges_in_any_order_with_duplicates_is_their_union(
    elements: list[tuple[tuple[int, int], int]], rnd: random.Random
) -> None:
    rendered = [render(a, b, zeros) for (a, b), zeros in elements]
    rendered += rnd.sample(rendered, k=rnd.randint(0, len(rendered)))  # duplicates
    rnd.shuffle(rendered)
    expected: set[int] = set()
    for (a, b), _ in elements:
        expected.update(range(a, b + 1))
    parsed = CPUSet.parse(",".join(rendered))
    assert set(parsed) == expected
    assert parsed == CPUSet(expected)


@PROPERTY
@given(id_sets, id_sets)
def test_algebra_agrees_with_python_sets(left: frozenset[int], right: frozenset[int]) -> None:
    a, b = CPUSet(left), CPUSet(right)
    assert set(a | b) == left | right
    assert set(a & b) == left & right
    assert set(a - b) == left - right
    assert set(a ^ b) == left ^ right
    assert a.issubset(b) == (left <= right)
    assert a.issuperset(b) == (left >= right)
    assert a.isdisjoint(b) == left.isdisjoint(right)
    assert (a == b) == (left == right)


@PROPERTY
@given(id_sets)
def test_len_equals_python_set_length(members: frozenset[int]) -> None:
    assert len(CPUSet(members)) == len(members)
    assert bool(CPUSet(members)) == bool(members)


@PROPERTY
@given(id_sets)
def test_iteration_is_sorted_ascending(members: frozenset[int]) -> None:
    assert list(CPUSet(members)) == sorted(members)


@PROPERTY
@given(id_sets, st.integers(min_value=0, max_value=80))
def test_lowest_takes_the_first_members_in_order(members: frozenset[int], count: int) -> None:
    assert list(CPUSet(members).lowest(count)) == sorted(members)[:count]


@PROPERTY
@given(st.text(alphabet="0123456789,- a\n", max_size=30))
def test_parse_of_arbitrary_text_succeeds_canonically_or_raises_a_syntax_error(
    text: str,
) -> None:
    try:
        parsed = CPUSet.parse(text)
    except CpuListSyntaxError as caught:
        error = caught
    else:
        assert parsed  # an empty result is only possible with allow_empty
        assert CPUSet.parse(parsed.format()) == parsed
        return
    assert 0 <= error.position <= len(text)
    assert error.text == text
    assert error.problem
