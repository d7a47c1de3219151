"""Which keys a running daemon can change live, and what a reload changes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import attrs

from cpuset_adapters.config.schema import Config, keys, value_at

LIVE_KEYS: Final = frozenset({
    # Who may pin and the allocator's options only steer later decisions (the core's
    # LIVE_SETTINGS); running containers keep their CPUs.
    "pinning.namespaces", "cpus.full_physical_cores",
    "cpus.numa_spanning", "cpus.keep_free_numa_nodes", "cpus.min_shared_pool",
    # Only the threshold of the loggers changes.
    "observability.log_level",
})
"""Keys a reload applies at once; every other key needs a restart: the pin annotation and
the reservation re-decide running containers, and sockets and the listener are opened once."""


def changed_keys(old: Config, new: Config) -> list[str]:
    """The dotted keys whose values differ, in file order."""
    return [key for key in keys() if value_at(old, key) != value_at(new, key)]


def with_values_of(new: Config, old: Config, names: Iterable[str]) -> Config:
    """``new`` with the dotted keys ``names`` taken from ``old``."""
    for key in names:
        section_name, _, field = key.partition(".")
        section = attrs.evolve(getattr(new, section_name), **{field: value_at(old, key)})
        new = attrs.evolve(new, **{section_name: section})
    return new
