"""What a running irqbalance is told while CPUs are quiet (issue 43): the CPUs it bans by
itself, as irqbalance 1.9.2 decides them at every rescan, and the one message that adds the
quiet CPUs or gives its own set back."""

from __future__ import annotations

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_core.irqbalance import GIVE_BACK, ban_message, own_banned


def test_its_own_set_is_the_banned_cpulist_from_its_environment() -> None:
    assert own_banned({"IRQBALANCE_BANNED_CPULIST": "1,4-5"}, CPUSet({7}), CPUSet()) == \
        CPUSet({1, 4, 5})


def test_the_deprecated_hex_mask_wins_over_the_list_as_in_irqbalance() -> None:
    env = {"IRQBALANCE_BANNED_CPUS": "00000030", "IRQBALANCE_BANNED_CPULIST": "1"}
    assert own_banned(env, CPUSet(), CPUSet()) == CPUSet({4, 5})


def test_without_either_it_bans_the_isolated_and_nohz_full_cpus() -> None:
    assert own_banned({"IRQBALANCE_BANNED_CPULIST": ""}, CPUSet({2}), CPUSet({3})) == \
        CPUSet({2, 3})


def test_an_unreadable_banned_list_is_refused() -> None:
    with pytest.raises(ValueError, match="x-"):
        own_banned({"IRQBALANCE_BANNED_CPULIST": "x-"}, CPUSet(), CPUSet())


def test_the_message_bans_its_own_cpus_and_the_quiet_ones_as_one_cpu_list() -> None:
    assert ban_message(CPUSet({3}), CPUSet({1, 2})) == "settings cpus 1-3"


def test_with_nothing_quiet_the_message_gives_its_own_set_back() -> None:
    assert ban_message(CPUSet({3}), CPUSet()) == GIVE_BACK == "settings cpus NULL"
