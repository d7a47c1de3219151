"""Table tests for ``CPUSet`` as a value: equality and hashing, immutability, pickling and
copying, the constructors and their limits, and its text forms.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from cpuset_core.cpuset import EMPTY, MAX_ID, CPUSet

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
