"""Which keys a running daemon can change live, and what a reload changes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import attrs

from cpuset_adapters.config.load import SETTING_OF_KEY
from cpuset_adapters.config.schema import Config, keys, value_at
from cpuset_core import LIVE_SETTINGS

LIVE_KEYS: Final = frozenset({
    # The keys of the settings the engine changes live (LIVE_SETTINGS: who may pin, the
    # allocation options, the minimum pool); running containers keep their CPUs.
    *(key for key, setting in SETTING_OF_KEY.items() if setting in LIVE_SETTINGS),
    # Only the threshold of the loggers changes.
    "observability.log_level",
    # Where the next updates go (the kernel first, or the runtime only).
    "runtime.kernel_updates",
    # Whether the next kernel writes also set systemd scopes' properties.
    "runtime.systemd_units",
    # Exclusive containers' own CFS quota, from the next admission or resize on.
    "cpus.exclusive_cpu_quota",
    # How long the next containers not seen to start keep their CPUs.
    "runtime.start_grace",
    # What the next published NodeResourceTopology declares.
    "topology_publisher.policy",
    # How often the node's next SharedPoolChanged event may follow the last one.
    "events.shared_pool_interval",
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
