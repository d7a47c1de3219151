"""The sysfs adapter reads back what a kernel-shaped tree says and names the file at fault."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_core.cpuset import CPUSet
from cpuset_core.errors import TopologyError
from cpuset_core.topology import Topology
from cpuset_lab.machines import (
    DUAL_SOCKET_HT,
    NAMED_SHAPES,
    MachineShape,
    build_topology,
    write_sysfs_tree,
)

REAL_ONLINE = Path("/sys/devices/system/cpu/online")


def _read(root: Path) -> Topology:
    return SysfsTopologySource(root).read_topology()


def _cpu_dir(root: Path) -> Path:
    return root / "devices" / "system" / "cpu"


def _node_dir(root: Path) -> Path:
    return root / "devices" / "system" / "node"


def _what_matters(topology: Topology) -> dict[str, object]:
    return {
        "known": topology.known,
        "cores": topology.cores,
        "numa": {cpu: topology.numa_of(cpu) for cpu in topology.known},
        "sockets": {s: topology.cpus_of_socket(s) for s in topology.sockets},
        "l3_groups": topology.l3_groups,
        "online": topology.online,
        "isolated": topology.isolated,
        "distances": {a: dict(row) for a, row in topology.numa_distances.items()},
        "memory": topology.nodes_with_memory(),
    }


@pytest.fixture
def dual_socket_tree(tmp_path: Path) -> Path:
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path)
    return tmp_path


# -- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", NAMED_SHAPES.values(), ids=NAMED_SHAPES.keys())
def test_reading_a_written_tree_gives_the_shapes_topology(shape: MachineShape,
                                                          tmp_path: Path) -> None:
    write_sysfs_tree(shape, tmp_path)

    topology = _read(tmp_path)

    assert _what_matters(topology) == _what_matters(build_topology(shape))
    assert topology == build_topology(shape)


def test_memoryless_nodes_are_read_from_has_memory(tmp_path: Path) -> None:
    shape = MachineShape(sockets=1, numa_per_socket=2, cores_per_numa=2, threads_per_core=1,
                         memoryless_numa=CPUSet((1,)))
    write_sysfs_tree(shape, tmp_path)

    assert _read(tmp_path).nodes_with_memory() == CPUSet((0,))


def test_every_node_has_memory_when_has_memory_is_absent(dual_socket_tree: Path) -> None:
    (_node_dir(dual_socket_tree) / "has_memory").unlink()

    topology = _read(dual_socket_tree)

    assert topology.memory_nodes is None
    assert topology.nodes_with_memory() == CPUSet((0, 1))


def test_a_kernel_without_numa_puts_every_cpu_on_node_zero(dual_socket_tree: Path) -> None:
    shutil.rmtree(_node_dir(dual_socket_tree))

    topology = _read(dual_socket_tree)

    assert topology.numa_nodes == (0,)
    assert topology.cpus_of_numa(0) == CPUSet.range(0, 15)
    assert topology.numa_distances == {}


@pytest.mark.parametrize("content", ["", "\n"], ids=["missing", "empty"])
def test_no_isolated_cpus_when_the_isolated_file_is_missing_or_empty(dual_socket_tree: Path,
                                                                     content: str) -> None:
    isolated = _cpu_dir(dual_socket_tree) / "isolated"
    if content:
        isolated.write_text(content)
    else:
        isolated.unlink()

    assert _read(dual_socket_tree).isolated == CPUSet()


def test_isolated_cpus_the_topology_does_not_describe_are_dropped(tmp_path: Path) -> None:
    shape = MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=2, threads_per_core=2,
                         offline=CPUSet((3,)), isolated=CPUSet.range(1, 3))
    write_sysfs_tree(shape, tmp_path)

    assert _read(tmp_path).isolated == CPUSet.range(1, 2)


def test_die_id_defaults_to_zero_on_kernels_before_it_existed(dual_socket_tree: Path) -> None:
    for die_id in _cpu_dir(dual_socket_tree).glob("cpu*/topology/die_id"):
        die_id.unlink()

    assert all(info.die == 0 for info in _read(dual_socket_tree).cpus)


def test_without_cache_information_l3_groups_fall_back_to_sockets(dual_socket_tree: Path) -> None:
    for cache in _cpu_dir(dual_socket_tree).glob("cpu*/cache"):
        shutil.rmtree(cache)

    topology = _read(dual_socket_tree)

    assert all(info.l3 is None for info in topology.cpus)
    assert topology.l3_groups == (topology.cpus_of_socket(0), topology.cpus_of_socket(1))


def test_an_offline_cpu_that_keeps_its_topology_is_known_through_its_node_link(
        tmp_path: Path) -> None:
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path)
    cpu_dir, node_dir = _cpu_dir(tmp_path), _node_dir(tmp_path)
    # Take CPU 15 (socket 1, node 1) offline the way older kernels did: topology/ stays.
    (cpu_dir / "online").write_text("0-14\n")
    (node_dir / "node1" / "cpulist").write_text("4-7,12-14\n")

    topology = _read(tmp_path)

    assert 15 in topology.known
    assert 15 not in topology.online
    assert topology.numa_of(15) == 1
    assert topology.core_cpus(15) == CPUSet((7, 15))


def test_reading_twice_sees_a_cpu_going_offline(tmp_path: Path) -> None:
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path)
    source = SysfsTopologySource(tmp_path)
    before = source.read_topology()

    (_cpu_dir(tmp_path) / "online").write_text("0-14\n")
    shutil.rmtree(_cpu_dir(tmp_path) / "cpu15" / "topology")

    assert before.online == CPUSet.range(0, 15)
    assert source.read_topology().online == CPUSet.range(0, 14)


# -- errors ------------------------------------------------------------------------------------


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


@pytest.mark.parametrize(
    ("relative", "content", "shown"),
    [
        ("cpu/online", None, "missing"),
        ("cpu/online", "0-\n", "'0-\\n'"),
        ("cpu/online", "\n", "empty list"),
        ("cpu/isolated", "2-x\n", "'2-x\\n'"),
        ("cpu/present", "0-7\n", "8-15"),
        ("cpu/cpu3/topology/core_id", "x\n", "'x\\n'"),
        ("cpu/cpu3/topology/core_id", None, "missing"),
        ("cpu/cpu3/topology/physical_package_id", "", "''"),
        ("cpu/cpu3/topology/die_id", "1.5\n", "'1.5\\n'"),
        ("cpu/cpu3/topology", None, "CPU 3 is online"),
        ("cpu/cpu3/cache/index3/level", "three\n", "'three\\n'"),
        ("cpu/cpu3/cache/index3/shared_cpu_list", "0-3,8-11,\n", "'0-3,8-11,\\n'"),
        ("cpu/cpu3/cache/index3/shared_cpu_list", "4-7\n", "does not contain CPU 3"),
        ("cpu/cpu3/cache/index3/shared_cpu_list", "0-7\n", "overlaps"),
        ("node/node1/cpulist", "4-7,12-16-\n", "'4-7,12-16-\\n'"),
        ("node/node1/cpulist", "3-7,12-15\n", "also listed by node 0"),
        ("node/node1/distance", "32 x\n", "'32 x'"),
        ("node/node1/distance", "32 10 12\n", "'32 10 12'"),
        ("node/node1/distance", None, "missing"),
        ("node/has_memory", "zero\n", "'zero\\n'"),
    ],
)
def test_a_missing_or_malformed_file_is_a_topology_error_naming_it(
        dual_socket_tree: Path, relative: str, content: str | None, shown: str) -> None:
    path = dual_socket_tree / "devices" / "system" / relative
    if content is None:
        _remove(path)
    else:
        path.write_text(content)

    with pytest.raises(TopologyError) as caught:
        _read(dual_socket_tree)

    assert str(path) in str(caught.value)
    assert shown in str(caught.value)


def test_an_online_cpu_without_a_cpu_directory_is_a_topology_error(
        dual_socket_tree: Path) -> None:
    shutil.rmtree(_cpu_dir(dual_socket_tree) / "cpu15")

    with pytest.raises(TopologyError, match=r"online CPU\(s\) 15 .* no cpuN directory") as caught:
        _read(dual_socket_tree)

    assert str(_cpu_dir(dual_socket_tree)) in str(caught.value)


def test_an_online_cpu_in_no_node_is_a_topology_error(dual_socket_tree: Path) -> None:
    (_node_dir(dual_socket_tree) / "node1" / "cpulist").write_text("4-7,12-14\n")
    (_cpu_dir(dual_socket_tree) / "cpu15" / "node1").unlink()

    with pytest.raises(TopologyError, match="online CPU 15 is in no node's cpulist") as caught:
        _read(dual_socket_tree)

    assert str(_node_dir(dual_socket_tree)) in str(caught.value)


# -- this machine ------------------------------------------------------------------------------


@pytest.mark.skipif(not REAL_ONLINE.exists(), reason="no /sys/devices/system/cpu/online here")
def test_this_machines_online_cpus_are_those_of_its_online_file() -> None:
    topology = SysfsTopologySource().read_topology()

    assert topology.online == CPUSet.parse(REAL_ONLINE.read_text())
    assert topology.online <= topology.known
