"""Hypothesis strategies for the engine's options."""

from __future__ import annotations

import dataclasses
import typing

from hypothesis import strategies as st

from cpuset_core.policy.exclusive import AllocationOptions


def allocation_options() -> st.SearchStrategy[AllocationOptions]:
    """Every field of :class:`AllocationOptions` drawn from its type, including fields added
    later. ``st.builds`` alone draws only required arguments and would leave every option at its
    default: strict alignment, memory binding and whole cores would never be drawn."""
    hints = typing.get_type_hints(AllocationOptions)
    fields = {f.name: st.from_type(hints[f.name]) for f in dataclasses.fields(AllocationOptions)}
    return st.builds(AllocationOptions, **fields)
