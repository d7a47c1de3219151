"""``CPUSet``: an immutable set of CPU (or NUMA node) ids, and the Linux list format.

Grammar accepted by :meth:`CPUSet.parse` (the kernel's ``cpulist`` format without strides)::

    list    := element ("," element)*
    element := id | id "-" id          (first id <= second id)
    id      := digit+                  (0 <= id <= MAX_ID)

Whitespace around the whole text (sysfs files end in a newline) is ignored; whitespace inside it
is an error. Duplicates and overlapping ranges merge. :meth:`CPUSet.format` is canonical: ids in
ascending order, runs of two or more collapsed into ``a-b``, so ``parse(format(s)) == s`` and
``format(parse(t))`` is stable.

The set is an ``int`` bitmask: union, intersection and difference on thousands of CPUs cost a few
machine words each, and the value is hashable and cheap to copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final, final

from cpuset_core.errors import CpuListSyntaxError

MAX_ID: Final = 8191
"""Largest id accepted: the kernel's own ceiling (x86-64 ``MAXSMP`` sets ``NR_CPUS`` to 8192).
Anything larger is a typo that would otherwise allocate an absurd bitmask."""

_MAX_DIGITS: Final = len(str(MAX_ID))


@final
class CPUSet:
    """An immutable set of non-negative ids with set algebra and the Linux list format."""

    __slots__ = ("_mask",)
    _mask: int

    def __init__(self, ids: Iterable[int] = ()) -> None:
        mask = 0
        for cpu in ids:
            if not 0 <= cpu <= MAX_ID:
                raise ValueError(f"CPU id {cpu} is outside 0..{MAX_ID}")
            mask |= 1 << cpu
        object.__setattr__(self, "_mask", mask)

    @classmethod
    def from_mask(cls, mask: int) -> CPUSet:
        """Return the set whose members are the bits of ``mask``."""
        if mask < 0 or mask.bit_length() > MAX_ID + 1:
            raise ValueError(f"mask {mask:#x} is outside the id range 0..{MAX_ID}")
        new = object.__new__(cls)
        object.__setattr__(new, "_mask", mask)
        return new

    @classmethod
    def range(cls, first: int, last: int) -> CPUSet:
        """Return ``{first, ..., last}`` (both inclusive); empty when ``last < first``."""
        if first < 0:
            raise ValueError(f"CPU id {first} is outside 0..{MAX_ID}")
        if last < first:
            return EMPTY
        return cls.from_mask(((1 << (last - first + 1)) - 1) << first)

    @classmethod
    def parse(cls, text: str, *, allow_empty: bool = False) -> CPUSet:
        """Parse the Linux list format.

        Returns the set; raises :class:`CpuListSyntaxError` naming the problem and its position
        in ``text``. An empty (or all-whitespace) text is an error unless ``allow_empty``.
        """
        return cls.from_mask(_parse_mask(text, allow_empty=allow_empty))

    # -- queries -------------------------------------------------------------------------------

    @property
    def mask(self) -> int:
        """The bitmask: bit ``i`` is set when id ``i`` is a member."""
        return self._mask

    def __len__(self) -> int:
        return self._mask.bit_count()

    def __bool__(self) -> bool:
        return self._mask != 0

    def __contains__(self, cpu: object) -> bool:
        return isinstance(cpu, int) and cpu >= 0 and bool(self._mask >> cpu & 1)

    def __iter__(self) -> Iterator[int]:
        mask = self._mask
        while mask:
            low = mask & -mask
            yield low.bit_length() - 1
            mask ^= low

    def first(self) -> int:
        """Return the smallest member; raises ``ValueError`` on the empty set."""
        if not self._mask:
            raise ValueError("empty CPUSet has no first member")
        return (self._mask & -self._mask).bit_length() - 1

    def last(self) -> int:
        """Return the largest member; raises ``ValueError`` on the empty set."""
        if not self._mask:
            raise ValueError("empty CPUSet has no last member")
        return self._mask.bit_length() - 1

    def lowest(self, count: int) -> CPUSet:
        """Return the ``count`` smallest members (all of them when there are fewer)."""
        return CPUSet.from_mask(lowest_bits(self._mask, count))

    def issubset(self, other: CPUSet) -> bool:
        return self._mask & ~other._mask == 0

    def issuperset(self, other: CPUSet) -> bool:
        return other._mask & ~self._mask == 0

    def isdisjoint(self, other: CPUSet) -> bool:
        return self._mask & other._mask == 0

    __le__ = issubset
    __ge__ = issuperset

    # -- algebra -------------------------------------------------------------------------------

    def __or__(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask | other._mask)

    def __and__(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask & other._mask)

    def __sub__(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask & ~other._mask)

    def __xor__(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask ^ other._mask)

    union = __or__
    intersection = __and__
    difference = __sub__

    @staticmethod
    def union_of(sets: Iterable[CPUSet]) -> CPUSet:
        """Return the union of any number of sets."""
        mask = 0
        for s in sets:
            mask |= s._mask
        return CPUSet.from_mask(mask)

    # -- identity and text ---------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CPUSet) and self._mask == other._mask

    def __hash__(self) -> int:
        return hash(self._mask)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CPUSet is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("CPUSet is immutable")

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (CPUSet.from_mask, (self._mask,))

    def format(self) -> str:
        """Return the canonical Linux list format ("" for the empty set)."""
        parts: list[str] = []
        mask = self._mask
        while mask:
            start = (mask & -mask).bit_length() - 1
            shifted = mask >> start
            # Trailing ones of `shifted` = length of the run that begins at `start`.
            length = (shifted ^ (shifted + 1)).bit_length() - 1
            end = start + length - 1
            parts.append(str(start) if end == start else f"{start}-{end}")
            mask &= ~(((1 << length) - 1) << start)
        return ",".join(parts)

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return f"CPUSet({self.format()!r})"


EMPTY: Final = CPUSet()


def lowest_bits(mask: int, count: int) -> int:
    """Return the ``count`` lowest set bits of ``mask`` (all of them when there are fewer)."""
    taken = 0
    for _ in range(count):
        if not mask:
            break
        low = mask & -mask
        taken |= low
        mask ^= low
    return taken


def _parse_mask(text: str, *, allow_empty: bool) -> int:
    """Return the bitmask of ``text``; see the module docstring for the grammar."""
    begin = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if begin >= end:
        if allow_empty:
            return 0
        raise CpuListSyntaxError(text, 0, "empty list")
    mask = 0
    pos = begin
    while True:
        element = pos
        first, pos = _parse_id(text, pos, end, "element")
        last = first
        if pos < end and text[pos] == "-":
            last, pos = _parse_id(text, pos + 1, end, "range end")
            if last < first:
                raise CpuListSyntaxError(text, element, f"reversed range {first}-{last}")
        mask |= ((1 << (last - first + 1)) - 1) << first
        if pos == end:
            return mask
        if text[pos] != ",":
            raise CpuListSyntaxError(text, pos, _unexpected(text[pos], "',' after an element"))
        pos += 1


def _parse_id(text: str, pos: int, end: int, what: str) -> tuple[int, int]:
    """Parse one id (the start of an element or a range end) at ``pos``; return it and the
    position after it."""
    start = pos
    while pos < end and "0" <= text[pos] <= "9":
        pos += 1
    if pos == start:
        if pos == end or text[pos] == ",":
            raise CpuListSyntaxError(text, pos, f"empty {what}")
        if text[pos] == "-" and what == "element":
            raise CpuListSyntaxError(text, pos, "negative id or missing range start")
        raise CpuListSyntaxError(text, pos, _unexpected(text[pos], "a digit"))
    digits = text[start:pos].lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS or int(digits) > MAX_ID:
        raise CpuListSyntaxError(text, start,
                                 f"id {text[start:pos]} is larger than the maximum {MAX_ID}")
    return int(digits), pos


def _unexpected(char: str, expected: str) -> str:
    if char.isspace():
        return "whitespace inside the list"
    return f"unexpected character {char!r} (expected {expected})"
