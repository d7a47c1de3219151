"""Synthetic machine shapes number CPUs like Linux and honour offline and isolated CPUs."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_lab.machines import (
    BIG_1024,
    DUAL_SOCKET_HT,
    EPYC_LIKE,
    EPYC_NPS4_256,
    INTEL_112,
    NAMED_SHAPES,
    OFFLINE_ISOLATED,
    THIS_MACHINE_LIKE,
    MachineShape,
    build_topology,
    write_sysfs_tree,
)


class Counts(NamedTuple):
    cpus: int
    cores: int
    numa_nodes: int
    sockets: int
    l3_groups: int


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        (THIS_MACHINE_LIKE, Counts(cpus=2, cores=2, numa_nodes=1, sockets=1, l3_groups=1)),
        (DUAL_SOCKET_HT, Counts(cpus=16, cores=8, numa_nodes=2, sockets=2, l3_groups=2)),
        (EPYC_LIKE, Counts(cpus=32, cores=16, numa_nodes=2, sockets=1, l3_groups=4)),
        (OFFLINE_ISOLATED, Counts(cpus=7, cores=4, numa_nodes=1, sockets=1, l3_groups=1)),
        (INTEL_112, Counts(cpus=112, cores=56, numa_nodes=2, sockets=2, l3_groups=2)),
        (EPYC_NPS4_256, Counts(cpus=256, cores=128, numa_nodes=8, sockets=2, l3_groups=16)),
        (BIG_1024, Counts(cpus=1024, cores=512, numa_nodes=16, sockets=2, l3_groups=16)),
    ],
    ids=["this-machine-like", "dual-socket-ht", "epyc-like", "offline-isolated", "intel-112",
         "epyc-nps4-256", "big-1024"],
)
def test_each_named_shape_has_the_expected_counts(shape: MachineShape, expected: Counts) -> None:
    topology = build_topology(shape)

    assert Counts(
        cpus=len(topology.known),
        cores=len(topology.cores),
        numa_nodes=len(topology.numa_nodes),
        sockets=len(topology.sockets),
        l3_groups=len(topology.l3_groups),
    ) == expected


@pytest.mark.parametrize("shape", [DUAL_SOCKET_HT, EPYC_LIKE, INTEL_112, EPYC_NPS4_256, BIG_1024],
                         ids=["dual-socket-ht", "epyc-like", "intel-112", "epyc-nps4-256",
                              "big-1024"])
def test_the_sibling_of_cpu_n_is_n_plus_the_number_of_cores(shape: MachineShape) -> None:
    topology = build_topology(shape)

    for cpu in range(shape.total_cores):
        assert topology.core_cpus(cpu) == CPUSet((cpu, cpu + shape.total_cores))


def test_first_threads_are_numbered_socket_by_socket_and_node_by_node() -> None:
    topology = build_topology(EPYC_NPS4_256)

    assert topology.cpus_of_numa(0) == CPUSet.range(0, 15) | CPUSet.range(128, 143)
    assert topology.cpus_of_numa(4) == CPUSet.range(64, 79) | CPUSet.range(192, 207)
    assert topology.cpus_of_socket(1) == CPUSet.range(64, 127) | CPUSet.range(192, 255)


def test_core_ids_restart_on_every_socket() -> None:
    topology = build_topology(DUAL_SOCKET_HT)

    assert [(topology.info(cpu).socket, topology.info(cpu).core) for cpu in (0, 3, 4, 7, 12)] \
        == [(0, 0), (0, 3), (1, 0), (1, 3), (1, 0)]


def test_l3_groups_split_each_node_into_equal_runs_of_cores() -> None:
    assert build_topology(EPYC_LIKE).l3_groups == tuple(
        CPUSet.range(first, first + 3) | CPUSet.range(first + 16, first + 19)
        for first in (0, 4, 8, 12))


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [(0, 0, 10), (0, 3, 12), (3, 0, 12), (0, 4, 32), (7, 4, 12), (7, 0, 32)],
)
def test_numa_distances_are_local_same_socket_or_other_socket(a: int, b: int,
                                                              distance: int) -> None:
    assert build_topology(EPYC_NPS4_256).distance(a, b) == distance


def test_an_offline_cpu_is_left_out_and_its_sibling_stands_alone() -> None:
    topology = build_topology(OFFLINE_ISOLATED)

    assert topology.known == CPUSet.range(0, 6)
    assert topology.online == CPUSet.range(0, 6)
    assert topology.core_cpus(3) == CPUSet((3,))
    assert topology.core_cpus(2) == CPUSet((2, 6))


def test_isolated_cpus_are_kept_and_offline_ones_are_not_isolated() -> None:
    assert build_topology(OFFLINE_ISOLATED).isolated == CPUSet.range(2, 3)
    shape = MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=2, threads_per_core=2,
                         offline=CPUSet((3,)), isolated=CPUSet((1, 3)))
    assert build_topology(shape).isolated == CPUSet((1,))


def test_memoryless_nodes_are_not_memory_nodes() -> None:
    shape = MachineShape(sockets=2, numa_per_socket=2, cores_per_numa=2, threads_per_core=1,
                         memoryless_numa=CPUSet((1, 3)))

    assert build_topology(shape).nodes_with_memory() == CPUSet((0, 2))
    assert build_topology(DUAL_SOCKET_HT).nodes_with_memory() == CPUSet((0, 1))


@pytest.mark.parametrize("shape", NAMED_SHAPES.values(), ids=NAMED_SHAPES.keys())
def test_building_a_topology_twice_gives_equal_topologies(shape: MachineShape) -> None:
    assert build_topology(shape) == build_topology(shape)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"sockets": 0}, "sockets must be at least 1"),
        ({"threads_per_core": 0}, "threads_per_core must be at least 1"),
        ({"l3_per_numa": 5}, "exceeds cores_per_numa"),
        ({"offline": CPUSet((8,))}, "offline CPU"),
        ({"isolated": CPUSet((9,))}, "isolated CPU"),
        ({"offline": CPUSet.range(0, 7)}, "every CPU is offline"),
        ({"memoryless_numa": CPUSet((1,))}, "memoryless node"),
    ],
)
def test_an_impossible_shape_is_rejected(fields: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 4,
                               "threads_per_core": 2}
    with pytest.raises(ValueError, match=message):
        MachineShape(**(base | fields))  # type: ignore[arg-type]


def test_a_written_tree_shows_an_offline_cpu_as_the_kernel_does(tmp_path: Path) -> None:
    write_sysfs_tree(OFFLINE_ISOLATED, tmp_path)
    cpu_dir = tmp_path / "devices" / "system" / "cpu"
    node_dir = tmp_path / "devices" / "system" / "node"

    assert (cpu_dir / "cpu7" / "online").read_text() == "0\n"
    assert not (cpu_dir / "cpu7" / "topology").exists()
    assert not (cpu_dir / "cpu7" / "cache").exists()
    assert (cpu_dir / "cpu6" / "online").read_text() == "1\n"
    assert (cpu_dir / "cpu3" / "topology" / "thread_siblings_list").read_text() == "3\n"
    assert (cpu_dir / "online").read_text() == "0-6\n"
    assert (cpu_dir / "offline").read_text() == "7\n"
    assert (cpu_dir / "isolated").read_text() == "2-3\n"
    assert (cpu_dir / "possible").read_text() == "0-7\n"
    assert (node_dir / "node0" / "cpulist").read_text() == "0-6\n"


def test_every_written_file_ends_in_a_newline(tmp_path: Path) -> None:
    write_sysfs_tree(EPYC_LIKE, tmp_path)

    files = [path for path in tmp_path.rglob("*") if path.is_file() and not path.is_symlink()]

    assert files
    assert all(path.read_text().endswith("\n") for path in files)


def test_a_written_tree_has_l3_caches_of_level_3_shared_by_their_group(tmp_path: Path) -> None:
    write_sysfs_tree(EPYC_LIKE, tmp_path)
    index3 = tmp_path / "devices" / "system" / "cpu" / "cpu21" / "cache" / "index3"

    assert (index3 / "level").read_text() == "3\n"
    assert (index3 / "type").read_text() == "Unified\n"
    assert (index3 / "shared_cpu_list").read_text() == "4-7,20-23\n"
    assert (tmp_path / "devices" / "system" / "node" / "node1" / "distance").read_text() \
        == "12 10\n"
