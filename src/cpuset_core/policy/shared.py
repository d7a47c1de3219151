"""The shared pool, the pool of the reserved CPUs, and the free set for exclusive requests."""

from __future__ import annotations

from cpuset_core.cpuset import CPUSet
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology


def shared_pool(topology: Topology, reserved: CPUSet, settings: Settings) -> CPUSet:
    """Return ``online − reserved − isolated`` (and − system-reserved when strict), where
    ``reserved`` is every pinned or exclusive CPU.

    Isolated CPUs stay out because the scheduler does not balance onto them: a shared
    container there would be stuck on whichever isolated CPU it first landed on.
    """
    pool = topology.online - reserved - topology.isolated
    if settings.strict_reservation:
        pool -= settings.system_reserved
    return pool


def exclusive_free(topology: Topology, reserved: CPUSet, settings: Settings,
                   isolated: bool | None = None) -> CPUSet:
    """Return the CPUs an integer container may be given now: with ``isolated`` true (it asked
    for them, ``isolated-cpus``) only isolated ones; false, none of them; ``None`` (it did not
    say), isolated ones only under ``exclusive_on_isolated``."""
    free = topology.online - reserved - settings.system_reserved
    if isolated:
        return free & topology.isolated
    if isolated is False or not settings.exclusive_on_isolated:
        free -= topology.isolated
    return free


def reserved_pool(topology: Topology, settings: Settings) -> CPUSet:
    """Return the CPUs containers on the reserved CPUs run on: ``system_reserved`` that are
    online and not isolated (the scheduler would not balance them there either). It depends on
    the machine and the settings alone: a pin naming reserved CPUs shares them with those
    containers, as it asked."""
    return settings.system_reserved & topology.online - topology.isolated
