"""Every TopologySource returns a consistent, repeatable Topology of the machine it describes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_adapters.topology_file import TopologyFileSource
from cpuset_adapters.topology_file_writer import write_topology
from cpuset_core.topology import Topology
from cpuset_lab.machines import EPYC_LIKE, OFFLINE_ISOLATED, build_topology, write_sysfs_tree

if TYPE_CHECKING:
    from cpuset_core.ports import TopologySource

REAL_SYS = Path("/sys")


def _sysfs_over_fixture(tmp_path: Path) -> TopologySource:
    write_sysfs_tree(OFFLINE_ISOLATED, tmp_path)
    return SysfsTopologySource(tmp_path)


def _sysfs_over_real_sys(_: Path) -> TopologySource:
    if not (REAL_SYS / "devices" / "system" / "cpu" / "online").exists():
        pytest.skip("this machine has no /sys/devices/system/cpu/online")
    return SysfsTopologySource(REAL_SYS)


def _static(_: Path) -> TopologySource:
    return StaticTopologySource(build_topology(EPYC_LIKE))


def _file(tmp_path: Path) -> TopologySource:
    path = tmp_path / "topology.json"
    write_topology(build_topology(OFFLINE_ISOLATED), path)
    return TopologyFileSource(path)


@pytest.fixture(params=[_sysfs_over_fixture, _sysfs_over_real_sys, _static, _file],
                ids=["sysfs-fixture", "sysfs-real", "static", "file"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> TopologySource:
    make: Callable[[Path], TopologySource] = request.param
    return make(tmp_path)


def test_it_returns_a_topology(source: TopologySource) -> None:
    assert isinstance(source.read_topology(), Topology)


def test_online_cpus_are_some_and_all_described(source: TopologySource) -> None:
    topology = source.read_topology()

    assert topology.online
    assert topology.online <= topology.known


def test_every_online_cpu_is_in_the_cpus_of_its_numa_node(source: TopologySource) -> None:
    topology = source.read_topology()

    for cpu in topology.online:
        assert cpu in topology.cpus_of_numa(topology.numa_of(cpu))


def test_siblings_are_symmetric(source: TopologySource) -> None:
    topology = source.read_topology()

    for cpu in topology.known:
        assert cpu not in topology.siblings(cpu)
        for sibling in topology.siblings(cpu):
            assert cpu in topology.siblings(sibling)


def test_isolated_cpus_are_described(source: TopologySource) -> None:
    topology = source.read_topology()

    assert topology.isolated <= topology.known


def test_reading_twice_gives_equal_topologies(source: TopologySource) -> None:
    assert source.read_topology() == source.read_topology()
