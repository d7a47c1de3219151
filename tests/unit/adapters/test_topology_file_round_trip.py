"""The topology file: every shape written and read back is equal, defaults and unusual facts
included, and the source reads the file afresh.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_adapters.topology_file import TopologyFileSource, load_topology
from cpuset_adapters.topology_file_writer import dump_topology, format_topology, write_topology
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.topology import CpuInfo, Topology
from cpuset_lab.machines import (
    NAMED_SHAPES,
    OFFLINE_ISOLATED,
    MachineShape,
    build_topology,
    write_sysfs_tree,
)
from tests.unit.adapters.topology_file_documents import _cpu, _parse, _two_by_two

REAL_ONLINE = Path("/sys/devices/system/cpu/online")


# -- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", NAMED_SHAPES.values(), ids=NAMED_SHAPES.keys())
def test_every_named_shape_written_and_read_back_is_equal(shape: MachineShape,
                                                         tmp_path: Path) -> None:
    topology = build_topology(shape)
    path = tmp_path / "topo.json"

    write_topology(topology, path)

    assert TopologyFileSource(path).read_topology() == topology
    assert _parse(json.loads(json.dumps(dump_topology(topology)))) == topology


def test_a_file_dumped_from_a_sysfs_tree_reads_as_the_tree(tmp_path: Path) -> None:
    write_sysfs_tree(OFFLINE_ISOLATED, tmp_path / "sys")
    from_sysfs = SysfsTopologySource(tmp_path / "sys").read_topology()

    write_topology(from_sysfs, tmp_path / "topo.json")

    assert load_topology(tmp_path / "topo.json") == from_sysfs


@pytest.mark.skipif(not REAL_ONLINE.exists(), reason="no sysfs")
def test_this_machines_topology_round_trips(tmp_path: Path) -> None:
    real = SysfsTopologySource("/sys").read_topology()

    write_topology(real, tmp_path / "real.json")

    assert load_topology(tmp_path / "real.json") == real


def test_unusual_facts_round_trip() -> None:
    # Dies, a CPU without L3, a negative package id, an offline CPU that is still described, a
    # memory-only node (2, only in the distance table) and a memoryless node (1).
    topology = Topology(
        cpus=(CpuInfo(cpu=0, core=0, socket=0, die=0, numa=0, l3=5),
              CpuInfo(cpu=1, core=0, socket=0, die=1, numa=1, l3=None),
              CpuInfo(cpu=4, core=7, socket=-1, die=0, numa=1, l3=None)),
        online=CPUSet((0, 1)),
        isolated=CPUSet((1,)),
        numa_distances={0: {0: 10, 1: 12, 2: 40}, 1: {0: 12, 1: 10, 2: 40},
                        2: {0: 40, 1: 40, 2: 10}},
        memory_nodes=CPUSet((0, 2)),
    )

    dumped = dump_topology(topology)

    assert dumped["cpus"]["1"] == {"socket": 0, "die": 1, "numa": 1, "core": 0}
    assert _parse(dumped) == topology


def test_defaults_are_left_out_of_the_dump() -> None:
    topology = _parse({"cpus": {"0": _cpu(), "1": _cpu(core=1)}})

    assert dump_topology(topology) == {"cpus": {"0": _cpu(), "1": _cpu(core=1)}}


def test_a_file_with_only_cpus_has_every_cpu_online_and_every_node_with_memory() -> None:
    topology = _parse({"cpus": {"0": _cpu(), "1": _cpu(core=1, numa=1)}})

    assert topology.online == CPUSet((0, 1))
    assert topology.isolated == EMPTY
    assert topology.numa_distances == {}
    assert topology.memory_nodes is None
    assert topology.nodes_with_memory() == CPUSet((0, 1))


def test_null_is_the_same_as_leaving_an_optional_key_out() -> None:
    with_nulls = {"cpus": {"0": _cpu(l3=None)}, "online": None, "isolated": None,
                  "numa_distances": None, "memory_nodes": None}

    assert _parse(with_nulls) == _parse({"cpus": {"0": _cpu()}})


def test_threads_sharing_socket_die_and_core_are_one_physical_core() -> None:
    topology = _parse(_two_by_two())

    assert topology.cores == (CPUSet((0, 2)), CPUSet((1, 3)))
    assert topology.isolated == CPUSet((1, 3))
    assert topology.nodes_with_memory() == CPUSet((0, 1))


def test_the_core_id_repeats_across_sockets_and_dies() -> None:
    topology = _parse({"cpus": {"0": _cpu(socket=0), "1": _cpu(socket=1),
                                "2": _cpu(socket=0, die=1)}})

    assert len(topology.cores) == 3


def test_a_list_of_lists_distance_table_reads_like_the_keyed_one() -> None:
    keyed = _two_by_two()
    listed = {**keyed, "numa_distances": [[10, 20], [20, 10]]}

    assert _parse(listed) == _parse(keyed)


def test_the_written_text_has_one_line_per_cpu() -> None:
    text = format_topology(build_topology(OFFLINE_ISOLATED))

    assert '    "2": {"socket": 0, "numa": 0, "core": 2, "l3": 0},' in text.splitlines()
    assert json.loads(text) == dump_topology(build_topology(OFFLINE_ISOLATED))


def test_the_source_reads_the_file_afresh_on_every_call(tmp_path: Path) -> None:
    path = tmp_path / "topo.json"
    path.write_text(json.dumps({"cpus": {"0": _cpu()}}))
    source = TopologyFileSource(path)
    first = source.read_topology()

    path.write_text(json.dumps({"cpus": {"0": _cpu(), "1": _cpu(core=1)}}))

    assert first.known == CPUSet((0,))
    assert source.read_topology().known == CPUSet((0, 1))
    assert repr(source) == f"TopologyFileSource({str(path)!r})"
