"""The topology file: every shape round-trips, and every bad entry is one line naming it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_adapters.topology_file import TopologyFileSource, load_topology, parse_topology
from cpuset_adapters.topology_file_writer import dump_topology, format_topology, write_topology
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import TopologyError
from cpuset_core.topology import CpuInfo, Topology
from cpuset_lab.machines import (
    NAMED_SHAPES,
    OFFLINE_ISOLATED,
    MachineShape,
    build_topology,
    write_sysfs_tree,
)

REAL_ONLINE = Path("/sys/devices/system/cpu/online")


def _cpu(socket: object = 0, numa: object = 0, core: object = 0, **more: Any) -> dict[str, Any]:
    return {"socket": socket, "numa": numa, "core": core, **more}


def _two_by_two() -> dict[str, Any]:
    """4 CPUs: 2 cores × 2 threads on one socket, one NUMA node per core."""
    return {
        "cpus": {"0": _cpu(numa=0, core=0, l3=0), "1": _cpu(numa=1, core=1, l3=1),
                 "2": _cpu(numa=0, core=0, l3=0), "3": _cpu(numa=1, core=1, l3=1)},
        "online": "0-3",
        "isolated": "1,3",
        "numa_distances": {"0": {"0": 10, "1": 20}, "1": {"0": 20, "1": 10}},
        "memory_nodes": [0, 1],
    }


def _parse(data: object) -> Topology:
    return parse_topology(data, source="topo.json")


def _error(data: object) -> str:
    with pytest.raises(TopologyError) as info:
        _parse(data)
    message = str(info.value)
    assert "\n" not in message
    return message


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


# -- reading the file ---------------------------------------------------------------------------


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(tmp_path / "nope.json")
    assert str(info.value) == f"{tmp_path / 'nope.json'}: cannot be read: No such file or directory"


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="cannot be read: Is a directory"):
        load_topology(tmp_path)


def test_the_path_is_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("topo.json").write_text("{")
    with pytest.raises(TopologyError) as info:
        load_topology("topo.json")
    assert str(info.value).startswith("topo.json: not valid JSON: ")


@pytest.mark.parametrize(("text", "message"), [
    ("", "not valid JSON: Expecting value at line 1 column 1"),
    ('{"cpus": {"0": {"socket": 0,}}}', "not valid JSON: Expecting property name enclosed in "
                                        "double quotes at line 1 column 29"),
    ('{"cpus": {"7": {"socket": 0}, "7": {"socket": 1}}}',
     'key "7" appears twice in one object'),
])
def test_text_that_is_not_one_json_document_is_reported_with_its_position(
        tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "topo.json"
    path.write_text(text)
    with pytest.raises(TopologyError) as info:
        load_topology(path)
    assert str(info.value) == f"{path}: {message}"


def test_bytes_that_are_not_utf8_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "topo.json"
    path.write_bytes(b'{"cpus": "\xff"}')
    with pytest.raises(TopologyError, match=r"topo.json: is not UTF-8 text: .* at byte 10$"):
        load_topology(path)


# -- every bad entry ----------------------------------------------------------------------------


def _with(change: dict[str, Any], *, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    data = copy.deepcopy(_two_by_two())
    data.update(change)
    for key in drop:
        del data[key]
    return data


def _with_cpu(cpu: str, entry: object) -> dict[str, Any]:
    data = _two_by_two()
    data["cpus"] = {**data["cpus"], cpu: entry}
    return data


BAD_FILES: list[tuple[str, object, str]] = [
    # shape of the document
    ("top level is a list", [], "expected an object, got a list"),
    ("top level is a string", "cpus", 'expected an object, got "cpus"'),
    ("no cpus", _with({}, drop=("cpus",)), 'missing "cpus"'),
    ("unknown top-level key", _with({"numa_distance": {}}),
     'unknown key "numa_distance" (known: "cpus", "online", "isolated", "numa_distances", '
     '"memory_nodes")'),
    ("cpus is a list", _with({"cpus": [_cpu()]}), "cpus: expected an object, got a list"),
    ("no cpu at all", _with({"cpus": {}}, drop=("online", "isolated")),
     "cpus: describes no CPU"),
    # one CPU's entry
    ("entry is a number", _with_cpu("7", 5), 'cpus["7"]: expected an object, got 5'),
    ("entry without numa", _with_cpu("7", {"socket": 0, "core": 3}), 'cpus["7"]: missing "numa"'),
    ("entry without socket", _with_cpu("7", {"numa": 0, "core": 3}),
     'cpus["7"]: missing "socket"'),
    ("entry without core", _with_cpu("7", {"socket": 0, "numa": 0}), 'cpus["7"]: missing "core"'),
    ("misspelt key", _with_cpu("7", _cpu(core=3, nuam=0)),
     'cpus["7"]: unknown key "nuam" (known: "socket", "die", "numa", "core", "l3")'),
    ("numa as text", _with_cpu("7", _cpu(core=3, numa="0")),
     'cpus["7"].numa: expected an integer, got "0"'),
    ("socket as boolean", _with_cpu("7", _cpu(core=3, socket=True)),
     'cpus["7"].socket: expected an integer, got true'),
    ("core as float", _with_cpu("7", _cpu(core=3.0)),
     'cpus["7"].core: expected an integer, got 3.0'),
    ("required null", _with_cpu("7", _cpu(core=None)),
     'cpus["7"].core: expected an integer, got null'),
    ("l3 as text", _with_cpu("7", _cpu(core=3, l3="0")),
     'cpus["7"].l3: expected an integer, got "0"'),
    ("die as list", _with_cpu("7", _cpu(core=3, die=[0])),
     'cpus["7"].die: expected an integer, got a list'),
    ("cpu id not a number", _with_cpu("cpu7", _cpu(core=3)),
     'cpus["cpu7"]: CPU id "cpu7" is not a number from 0 to 8191'),
    ("negative cpu id", _with_cpu("-1", _cpu(core=3)),
     'cpus["-1"]: CPU id "-1" is not a number from 0 to 8191'),
    ("cpu id too large", _with_cpu("8192", _cpu(core=3)),
     'cpus["8192"]: CPU id "8192" is not a number from 0 to 8191'),
    ("cpu id twice", _with_cpu("03", _cpu(core=3)),
     'cpus["03"]: CPU 3 is already described by cpus["3"]'),
    ("negative numa node", _with_cpu("7", _cpu(core=3, numa=-1)),
     'cpus["7"].numa: NUMA node -1 is outside 0..8191'),
    ("one core on two nodes", _with_cpu("7", _cpu(core=1, numa=0, l3=1)),
     'cpus["7"]: same core as CPU 1 (socket 0, die 0, core 1) but NUMA node 0 instead of 1'),
    ("one core in two L3 groups", _with_cpu("7", _cpu(core=1, numa=1, l3=0)),
     'cpus["7"]: same core as CPU 1 (socket 0, die 0, core 1) but L3 group 0 instead of 1'),
    ("L3 ids per socket", _with_cpu("7", _cpu(socket=1, core=0, numa=1, l3=1)),
     'cpus["7"]: L3 group 1 is on socket 0 (CPU 1), not 1: L3 ids are machine-wide, not per '
     'socket'),
    # online and isolated
    ("online syntax", _with({"online": "0-x"}),
     "online \"0-x\": unexpected character 'x' (expected a digit) at position 2"),
    ("online empty", _with({"online": ""}), 'online "": empty list at position 0'),
    ("online reversed", _with({"online": "3-1"}), 'online "3-1": reversed range 3-1 at position 0'),
    ("online as a list", _with({"online": [0, 1]}), "online: expected a string, got a list"),
    ("online undescribed", _with({"online": "0-5"}),
     'online "0-5": CPU(s) 4-5 are not described in "cpus"'),
    ("isolated syntax", _with({"isolated": "1, 3"}),
     'isolated "1, 3": whitespace inside the list at position 2'),
    ("isolated undescribed", _with({"isolated": "9"}),
     'isolated "9": CPU(s) 9 are not described in "cpus"'),
    # numa_distances
    ("distances a number", _with({"numa_distances": 10}),
     "numa_distances: expected an object or a list of lists, got 10"),
    ("distance as text", _with({"numa_distances": {"0": {"0": "10", "1": 20},
                                                   "1": {"0": 20, "1": 10}}}),
     'numa_distances["0"]["0"]: expected an integer, got "10"'),
    ("distance row a list", _with({"numa_distances": {"0": [10, 20], "1": {"0": 20, "1": 10}}}),
     'numa_distances["0"]: expected an object, got a list'),
    ("distance node not a number", _with({"numa_distances": {"0": {"0": 10, "one": 20},
                                                             "1": {"0": 20, "1": 10}}}),
     'numa_distances["0"]["one"]: NUMA node "one" is not a number from 0 to 8191'),
    ("distance row twice", _with({"numa_distances": {"0": {"0": 10, "1": 20}, "00": {},
                                                     "1": {"0": 20, "1": 10}}}),
     'numa_distances["00"]: node 0 has two rows'),
    ("distance column twice", _with({"numa_distances": {"0": {"0": 10, "1": 20, "01": 20},
                                                        "1": {"0": 20, "1": 10}}}),
     'numa_distances["0"]["01"]: node 1 appears twice in the row'),
    ("distance row incomplete", _with({"numa_distances": {"0": {"0": 10},
                                                          "1": {"0": 20, "1": 10}}}),
     'numa_distances["0"]: has distances to node(s) 0 but the table\'s nodes are 0-1'),
    ("distance zero", _with({"numa_distances": {"0": {"0": 10, "1": 0},
                                                "1": {"0": 20, "1": 10}}}),
     'numa_distances["0"]["1"]: distance 0 is not positive'),
    ("distances missing a cpu's node", _with({"numa_distances": {"0": {"0": 10}}}),
     "numa_distances: no row for NUMA node 1 (of CPU 1)"),
    ("list table not square", _with({"numa_distances": [[10, 20], [20]]}),
     "numa_distances[1]: 1 distances in a 2-node table (row i and column i are node i)"),
    ("list table row a number", _with({"numa_distances": [[10, 20], 20]}),
     "numa_distances[1]: expected a list, got 20"),
    ("list table cell a string", _with({"numa_distances": [[10, 20], [20, "10"]]}),
     'numa_distances[1][1]: expected an integer, got "10"'),
    ("list table negative", _with({"numa_distances": [[10, -20], [20, 10]]}),
     "numa_distances[0][1]: distance -20 is not positive"),
    # memory_nodes
    ("memory nodes as text", _with({"memory_nodes": "0-1"}),
     'memory_nodes: expected a list, got "0-1"'),
    ("memory node as text", _with({"memory_nodes": [0, "1"]}),
     'memory_nodes[1]: expected an integer, got "1"'),
    ("memory node unknown", _with({"memory_nodes": [0, 4]}),
     "memory_nodes[1]: NUMA node 4 is neither a CPU's node nor in numa_distances (nodes: 0-1)"),
    ("memory node negative", _with({"memory_nodes": [-1]}),
     "memory_nodes[0]: NUMA node -1 is neither a CPU's node nor in numa_distances (nodes: 0-1)"),
    ("memory nodes empty", _with({"memory_nodes": []}),
     "memory_nodes: is empty, so no NUMA node would have memory"),
    # several at once: the first, and how many more
    ("several problems", _with_cpu("7", {"socket": "0", "core": 1, "extra": 1}),
     'cpus["7"].socket: expected an integer, got "0" (and 2 more problems)'),
]


@pytest.mark.parametrize(("data", "message"), [(d, m) for _, d, m in BAD_FILES],
                         ids=[name for name, _, _ in BAD_FILES])
def test_a_bad_entry_is_one_line_naming_the_file_and_the_entry(data: object,
                                                              message: str) -> None:
    assert _error(data) == f"topo.json: {message}"


def test_the_example_file_is_valid() -> None:
    # The base of every case above must itself be fine, or the cases test nothing.
    assert _parse(_two_by_two()).known == CPUSet.range(0, 3)


# -- nothing else escapes -----------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 9000) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
_KEYS = st.sampled_from(["cpus", "online", "isolated", "numa_distances", "memory_nodes", "0",
                         "1", "socket", "numa", "core", "l3", "die"])


_PATHS = [("cpus",), ("cpus", "0"), ("cpus", "0", "numa"), ("cpus", "1", "l3"),
          ("cpus", "2", "die"), ("cpus", "9"), ("online",), ("isolated",), ("numa_distances",),
          ("numa_distances", "1"), ("numa_distances", "0", "1"), ("memory_nodes",), ("extra",)]


def _check_outcome(data: object) -> None:
    """``data`` reads as a topology, or the only exception is a one-line ``TopologyError``."""
    message = None
    try:
        _parse(data)
    except TopologyError as e:
        message = str(e)
    if message is not None:
        assert message.startswith("topo.json: ")
        assert "\n" not in message


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_KEYS, _JSON | st.dictionaries(_KEYS, _JSON | st.dictionaries(_KEYS, _JSON),
                                                     max_size=4), max_size=5))
def test_any_json_value_gives_a_topology_or_a_topology_error(data: dict[str, Any]) -> None:
    _check_outcome(data)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_PATHS), _JSON)
def test_any_value_anywhere_in_a_good_file_gives_a_topology_or_a_topology_error(
        path: tuple[str, ...], value: object) -> None:
    data = _two_by_two()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    _check_outcome(data)
