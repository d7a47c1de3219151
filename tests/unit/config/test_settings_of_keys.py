"""Which core setting each configuration key sets: the loader's mapping says what
``to_settings`` does, every setting has its key, and the live keys follow from the core."""

from __future__ import annotations

from dataclasses import fields

import attrs
import pytest

from cpuset_adapters.config import LIVE_KEYS, Config, keys, to_settings, value_at
from cpuset_adapters.config.load import SETTING_OF_KEY
from cpuset_core import LIVE_SETTINGS, AllocationOptions, Settings

# Values that are not the default and that ``to_settings`` can read (it expects checked ones).
OTHER_TEXT = {"cpus.reserved": "0", "cpus.numa_spanning": "spread",
              "cpus.alignment": "single-numa-node", "cpus.alignment_scope": "pod",
              "cpus.bind_memory": "exclusive", "cpus.exclusive_cpu_quota": "kubelet",
              "cpus.unmet_requests": "refuse"}
ALSO_SETS = {"cpus.reserved": ["reserved_namespaces"]}
"""Settings a key decides besides its own: reserving CPUs puts kube-system's pods on them
while ``cpus.reserved_namespaces`` is unset (its default)."""


def other_value(key: str, value: object) -> object:
    """A value of ``key`` other than ``value``, of the same type."""
    if key in OTHER_TEXT:
        return OTHER_TEXT[key]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, tuple):
        return (*value, "other")
    if value is None:  # cpus.reserved_namespaces: unset
        return ("other",)
    return f"{value}-other"


def with_value(config: Config, key: str, value: object) -> Config:
    section, _, name = key.partition(".")
    return attrs.evolve(config, **{section: attrs.evolve(getattr(config, section),
                                                         **{name: value})})


@pytest.mark.parametrize("key", keys())
def test_each_key_sets_exactly_the_setting_the_loader_maps_it_to(key: str) -> None:
    default = Config()
    changed = with_value(default, key, other_value(key, value_at(default, key)))
    moved = to_settings(default).differences(to_settings(changed))
    assert moved == ([SETTING_OF_KEY[key], *ALSO_SETS.get(key, [])] if key in SETTING_OF_KEY
                     else [])


def test_every_setting_is_set_by_exactly_one_key() -> None:
    assert sorted(SETTING_OF_KEY.values()) == sorted(Settings().by_name())


def test_every_allocation_option_is_the_live_cpus_key_of_its_own_name() -> None:
    for option in fields(AllocationOptions):
        assert SETTING_OF_KEY[f"cpus.{option.name}"] == f"allocation.{option.name}"
        assert f"cpus.{option.name}" in LIVE_KEYS


def test_a_key_is_live_when_its_setting_is_or_it_is_log_level_kernel_path_grace_policy_or_quota(
        ) -> None:
    engine_keys = {key for key in LIVE_KEYS if key in SETTING_OF_KEY}
    assert {SETTING_OF_KEY[key] for key in engine_keys} == LIVE_SETTINGS
    assert LIVE_KEYS - engine_keys == {"observability.log_level", "runtime.kernel_updates",
                                       "runtime.systemd_units", "runtime.start_grace",
                                       "topology_publisher.policy", "cpus.exclusive_cpu_quota",
                                       "events.shared_pool_interval"}
