"""The dry-run runtime sets containers' cpusets as the real runtime does."""

from __future__ import annotations

from cpuset_adapters.dry_run import DryRunHost, DryRunRuntime
from cpuset_core.engine import CpusetEngine
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET, cpus


def test_a_resize_whose_placement_names_no_mems_leaves_the_memory_nodes_as_they_are() -> None:
    """A placement without mems (anything but a pin) means "leave cpuset.mems as it is", as
    NRI's empty string does; unsetting them would change what a later rollback restores."""
    runtime = DryRunRuntime(DryRunHost(DUAL_SOCKET), CpusetEngine(DUAL_SOCKET))
    web = pod("web", qos="burstable")
    runtime.create_container(web, container("web", web))
    runtime.host.containers["web"].mems = cpus("0-1")  # e.g. written by an earlier correction
    plan = runtime.resize_container(web, container("web", web, cpu_limit=0.5))
    assert plan.placement is not None
    assert plan.placement.mems is None
    assert runtime.host.containers["web"].mems == cpus("0-1")
    assert runtime.host.containers["web"].cpus == plan.placement.cpus
