"""The topology file's bad entries: each one is one line naming the file and the entry; the
example file is valid.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_core.errors import TopologyError
from tests.unit.adapters.topology_file_documents import _cpu, _parse, _two_by_two


def _error(data: object) -> str:
    with pytest.raises(TopologyError) as info:
        _parse(data)
    message = str(info.value)
    assert "\n" not in message
    return message


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
