"""``nri-cpuset topology`` on sysfs fixtures, topology files, this machine, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from cpuset_adapters.topology_file_writer import dump_topology, write_topology
from cpuset_cli.commands.topology import topology
from cpuset_core.cpuset import CPUSet
from cpuset_lab.machines import (
    DUAL_SOCKET_HT,
    EPYC_LIKE,
    EPYC_NPS4_256,
    OFFLINE_ISOLATED,
    MachineShape,
    build_topology,
    write_sysfs_tree,
)

REAL_ONLINE = Path("/sys/devices/system/cpu/online")


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(topology, list(args))


def _json(*args: str) -> dict[str, Any]:
    result = _invoke(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _file(tmp_path: Path, shape: MachineShape, name: str = "topo.json") -> Path:
    path = tmp_path / name
    write_topology(build_topology(shape), path)
    return path


def _tree(tmp_path: Path, shape: MachineShape) -> Path:
    root = tmp_path / "sys"
    write_sysfs_tree(shape, root)
    return root


def _bad_input(result: Result) -> str:
    """Assert exit code 2 with one line on stderr and no traceback; return the line."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# -- the table ----------------------------------------------------------------------------------


def test_the_table_has_one_line_per_core_group_with_each_core_as_its_threads(
        tmp_path: Path) -> None:
    result = _invoke("--sysfs-root", str(_tree(tmp_path, DUAL_SOCKET_HT)))

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"{tmp_path / 'sys'}: 16 CPUs; online 0-15; offline none; isolated none"
    assert lines[1] == ("2 sockets, 2 dies, 2 NUMA nodes (memory on 0-1), 2 L3 groups, "
                        "8 cores × 2 threads")
    assert "0       0    0     0   0-3,8-11   0/8 1/9 2/10 3/11" in lines
    assert "1       0    1     1   4-7,12-15  4/12 5/13 6/14 7/15" in lines
    assert not any(line != line.rstrip() for line in lines)


def test_the_table_shows_numa_nodes_with_memory_and_distances(tmp_path: Path) -> None:
    result = _invoke("--topology", str(_file(tmp_path, EPYC_LIKE)))

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "NUMA  CPUs        memory  pinned mems  →0  →1" in lines
    assert "0     0-7,16-23   yes     0            10  12" in lines
    assert "1     8-15,24-31  yes     1            12  10" in lines
    groups = [line for line in lines if line.startswith("0       0    ")]
    assert len(groups) == 4  # 2 NUMA nodes × 2 L3 groups


def test_a_large_machine_keeps_one_line_per_core_group_when_piped(tmp_path: Path) -> None:
    result = _invoke("--topology", str(_file(tmp_path, EPYC_NPS4_256)))

    assert result.exit_code == 0, result.output
    groups = [line for line in result.stdout.splitlines()[1:] if "/" in line]
    assert len(groups) == 16
    assert groups[0].endswith("0/128 1/129 2/130 3/131 4/132 5/133 6/134 7/135")


def test_isolated_and_offline_threads_are_marked(tmp_path: Path) -> None:
    # OFFLINE_ISOLATED with its offline CPU 7 still described, as a topology file can say.
    data = dump_topology(build_topology(OFFLINE_ISOLATED))
    data["cpus"]["7"] = {"socket": 0, "numa": 0, "core": 3, "l3": 0}
    data["online"] = "0-6"
    path = tmp_path / "topo.json"
    path.write_text(json.dumps(data))

    result = _invoke("--topology", str(path))

    assert result.exit_code == 0, result.output
    assert "online 0-6; offline 7; isolated 2-3" in result.stdout
    assert "0/4 1/5 2*/6 3*/7~" in result.stdout
    assert "(* isolated, ~ offline)" in result.stdout
    assert "4 cores × 2 threads" in result.stdout


def test_mixed_threads_per_core_are_counted(tmp_path: Path) -> None:
    result = _invoke("--sysfs-root", str(_tree(tmp_path, OFFLINE_ISOLATED)))

    assert result.exit_code == 0, result.output
    assert "4 cores: 3 × 2 threads, 1 × 1 thread" in result.stdout
    assert "0/4 1/5 2*/6 3*" in result.stdout
    assert "(* isolated)" in result.stdout


def test_a_memoryless_node_shows_where_pinned_pods_get_memory(tmp_path: Path) -> None:
    shape = MachineShape(sockets=1, numa_per_socket=2, cores_per_numa=2, threads_per_core=1,
                         memoryless_numa=CPUSet((1,)))

    result = _invoke("--topology", str(_file(tmp_path, shape)))

    assert result.exit_code == 0, result.output
    assert "2 NUMA nodes (memory on 0)" in result.stdout
    assert "1     2-3   no      0            12  10" in result.stdout


# -- JSON ---------------------------------------------------------------------------------------


def test_json_has_the_documented_schema(tmp_path: Path) -> None:
    data = _json("--topology", str(_file(tmp_path, DUAL_SOCKET_HT)))

    assert list(data) == ["schema", "source", "cpus", "threads_per_core", "sockets",
                          "numa_nodes", "l3_groups", "cores", "core_groups"]
    assert data["schema"] == 1
    assert data["source"] == str(tmp_path / "topo.json")
    assert data["cpus"] == {"described": "0-15", "online": "0-15", "offline": "",
                            "isolated": ""}
    assert data["threads_per_core"] == {"2": 8}
    assert data["sockets"][1] == {"id": 1, "cpus": "4-7,12-15",
                                  "dies": [{"id": 0, "cpus": "4-7,12-15"}],
                                  "numa_nodes": "1", "cores": 4}
    assert data["numa_nodes"][0] == {"id": 0, "cpus": "0-3,8-11", "has_memory": True,
                                     "pinned_mems": "0", "distances": {"0": 10, "1": 32}}
    assert data["l3_groups"][1] == {"id": 1, "cpus": "4-7,12-15", "sockets": "1",
                                    "numa_nodes": "1"}
    assert data["cores"][5] == {"socket": 1, "die": 0, "core": 1, "numa": 1, "l3": 1,
                                "threads": [5, 13]}
    assert data["core_groups"][0] == {"socket": 0, "die": 0, "numa": 0, "l3": 0,
                                      "cpus": "0-3,8-11",
                                      "cores": [[0, 8], [1, 9], [2, 10], [3, 11]]}


def test_json_from_a_sysfs_tree_and_from_a_file_of_the_same_machine_agree(
        tmp_path: Path) -> None:
    from_tree = _json("--sysfs-root", str(_tree(tmp_path, EPYC_LIKE)))
    from_file = _json("--topology", str(_file(tmp_path, EPYC_LIKE)))

    assert {**from_tree, "source": ""} == {**from_file, "source": ""}


def test_json_lists_a_memory_only_node(tmp_path: Path) -> None:
    path = tmp_path / "cxl.json"
    path.write_text(json.dumps({
        "cpus": {"0": {"socket": 0, "numa": 0, "core": 0}},
        "numa_distances": [[10, 50], [50, 10]],
        "memory_nodes": [0, 1],
    }))

    nodes = _json("--topology", str(path))["numa_nodes"]

    assert nodes[1] == {"id": 1, "cpus": "", "has_memory": True, "pinned_mems": None,
                        "distances": {"0": 50, "1": 10}}


# -- this machine -------------------------------------------------------------------------------


@pytest.mark.skipif(not REAL_ONLINE.exists(), reason="no sysfs")
def test_this_machines_topology_is_shown() -> None:
    table = _invoke()
    data = _json()

    assert table.exit_code == 0, table.output
    assert table.stdout.startswith("/sys: ")
    assert data["source"] == "/sys"
    assert CPUSet.parse(data["cpus"]["online"]) == CPUSet.parse(REAL_ONLINE.read_text())
    assert sum(len(core["threads"]) for core in data["cores"]) == len(
        CPUSet.parse(data["cpus"]["described"]))


# -- bad input ----------------------------------------------------------------------------------


def test_sysfs_root_and_topology_together_are_a_usage_error(tmp_path: Path) -> None:
    result = _invoke("--sysfs-root", str(tmp_path), "--topology", str(tmp_path / "t.json"))

    assert result.exit_code == 2
    assert "Error: --sysfs-root and --topology are mutually exclusive" in result.stderr
    assert "Traceback" not in result.output


def test_a_missing_topology_file_is_one_line(tmp_path: Path) -> None:
    line = _bad_input(_invoke("--topology", str(tmp_path / "nope.json")))

    assert line == f"error: {tmp_path / 'nope.json'}: cannot be read: No such file or directory"


def test_a_topology_file_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "topo.json"
    path.write_text('{"cpus": ')

    line = _bad_input(_invoke("--topology", str(path)))

    assert line == f"error: {path}: not valid JSON: Expecting value at line 1 column 10"


def test_a_cpu_missing_its_numa_node_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "topo.json"
    path.write_text(json.dumps({"cpus": {"0": {"socket": 0, "numa": 0, "core": 0},
                                         "7": {"socket": 0, "core": 1}}}))

    line = _bad_input(_invoke("--topology", str(path), "-o", "json"))

    assert line == f'error: {path}: cpus["7"]: missing "numa"'


def test_a_broken_sysfs_tree_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "devices" / "system" / "cpu").mkdir(parents=True)

    line = _bad_input(_invoke("--sysfs-root", str(tmp_path)))

    assert line == f"error: {tmp_path}/devices/system/cpu/online: required file is missing"


def test_a_sysfs_root_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    line = _bad_input(_invoke("--sysfs-root", str(tmp_path / "absent")))

    assert "absent/devices/system/cpu/online: required file is missing" in line


def test_an_unknown_output_format_is_a_usage_error(tmp_path: Path) -> None:
    result = _invoke("--topology", str(_file(tmp_path, EPYC_LIKE)), "-o", "yaml")

    assert result.exit_code == 2
    assert "'yaml' is not one of 'table', 'json'" in result.stderr


# -- help and registration -----------------------------------------------------------------------


def test_help_has_a_real_example() -> None:
    result = _invoke("--help")

    assert result.exit_code == 0
    assert "Example:\n    nri-cpuset topology\n" in result.stdout
    assert "--sysfs-root DIR" in result.stdout
    assert "--topology FILE" in result.stdout


def test_it_runs_as_a_subcommand_of_a_group(tmp_path: Path) -> None:
    @click.group()
    def group() -> None:
        pass

    group.add_command(topology)
    result = CliRunner().invoke(group, ["topology", "--topology",
                                        str(_file(tmp_path, DUAL_SOCKET_HT)), "-o", "json"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["schema"] == 1
