"""``nri-cpuset check-annotation`` on topology files, sysfs fixtures, this machine, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from cpuset_adapters.topology_file_writer import dump_topology, write_topology
from cpuset_cli.commands.check_annotation import check_annotation
from cpuset_core.cpuset import CPUSet
from cpuset_core.workload import TOGGLES, Toggle
from cpuset_lab.machines import (
    DUAL_SOCKET_HT,
    INTEL_112,
    OFFLINE_ISOLATED,
    MachineShape,
    build_topology,
    write_sysfs_tree,
)

REAL_ONLINE = Path("/sys/devices/system/cpu/online")


def _check(value: str, *args: str) -> Result:
    # "--" so that a value such as "-1" is not read as an option, as on a command line.
    return CliRunner().invoke(check_annotation, [*args, "--", value])


def _file(tmp_path: Path, shape: MachineShape) -> str:
    path = tmp_path / "topo.json"
    write_topology(build_topology(shape), path)
    return str(path)


def _report(result: Result) -> dict[str, list[str]]:
    """The ``name  text`` lines of a valid report (notes may repeat)."""
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith("valid: weka.io/cores-ids=")
    rows: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, text = line.strip().split("  ", 1)
        rows.setdefault(name, []).append(text.strip())
    return rows


def _invalid(result: Result) -> list[str]:
    assert result.exit_code == 3, result.output
    assert result.stdout == ""
    assert "Traceback" not in result.output
    return result.stderr.splitlines()


# -- valid values ------------------------------------------------------------------------------


def test_a_valid_value_prints_its_canonical_form_cores_and_mems(tmp_path: Path) -> None:
    rows = _report(_check("56-59,0-3", "--topology", _file(tmp_path, INTEL_112)))

    assert rows["canonical"] == ["0-3,56-59"]
    assert rows["cpus"] == ["8 CPUs on 4 cores: 0/56 1/57 2/58 3/59"]
    assert rows["NUMA nodes"] == ["0"]
    assert rows["mems"] == ["0 (cpuset.mems of every container of the pod)"]
    assert "note" not in rows


def test_pins_across_nodes_get_the_memory_of_every_node(tmp_path: Path) -> None:
    rows = _report(_check("0,4", "--topology", _file(tmp_path, DUAL_SOCKET_HT)))

    assert rows["NUMA nodes"] == ["0-1"]
    assert rows["mems"][0].startswith("0-1 ")
    assert rows["note"] == ["CPU(s) 8,12 share a core with the named CPUs but are not named"]


def test_a_memoryless_node_gets_the_nearest_memory_node(tmp_path: Path) -> None:
    shape = MachineShape(sockets=2, numa_per_socket=2, cores_per_numa=2, threads_per_core=1,
                         memoryless_numa=CPUSet((1,)))

    rows = _report(_check("2-3", "--topology", _file(tmp_path, shape)))

    assert rows["NUMA nodes"] == ["1"]
    # Node 0 is on the same socket (distance 12); nodes 2-3 are on the other (32).
    assert rows["mems"][0].startswith("0 ")


def test_isolated_cpus_are_valid_with_a_note(tmp_path: Path) -> None:
    rows = _report(_check("2-3", "--sysfs-root", str(_tree(tmp_path, OFFLINE_ISOLATED))))

    assert rows["canonical"] == ["2-3"]
    assert any(note.startswith("CPU(s) 2-3 are isolated") for note in rows["note"])


def test_many_cores_are_counted_but_not_listed(tmp_path: Path) -> None:
    rows = _report(_check("0-27,56-83", "--topology", _file(tmp_path, INTEL_112)))

    assert rows["cpus"] == ["56 CPUs on 28 cores"]


def _tree(tmp_path: Path, shape: MachineShape) -> Path:
    root = tmp_path / "sys"
    write_sysfs_tree(shape, root)
    return root


@pytest.mark.skipif(not REAL_ONLINE.exists(), reason="no sysfs")
def test_the_first_online_cpu_of_this_machine_is_a_valid_value() -> None:
    first = str(CPUSet.parse(REAL_ONLINE.read_text()).first())

    rows = _report(_check(first))

    assert rows["canonical"] == [first]


@pytest.mark.skipif(not REAL_ONLINE.exists(), reason="no sysfs")
def test_a_cpu_beyond_this_machine_is_invalid() -> None:
    lines = _invalid(_check("8191"))

    assert lines[0].startswith("error: weka.io/cores-ids='8191' names CPU(s) that are not "
                               "online: 8191 (not in the topology); online: ")


# -- invalid values ------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "problem", "position"), [
    ("0-x", "unexpected character 'x' (expected a digit)", 2),
    ("0,,1", "empty element", 2),
    ("3-1", "reversed range 3-1", 0),
    ("0, 1", "whitespace inside the list", 2),
    ("", "empty list", 0),
    ("-1", "negative id or missing range start", 0),
    ("9000", "id 9000 is larger than the maximum 8191", 0),
])
def test_a_syntax_error_names_the_problem_and_points_at_it(tmp_path: Path, value: str,
                                                           problem: str, position: int) -> None:
    lines = _invalid(_check(value, "--topology", _file(tmp_path, DUAL_SOCKET_HT)))

    assert lines == [f"error: weka.io/cores-ids={value!r} is invalid: {problem} at position "
                     f"{position}",
                     f"  {value}",
                     "  " + " " * position + "^"]


def test_cpus_that_do_not_exist_or_are_offline_are_named(tmp_path: Path) -> None:
    data = dump_topology(build_topology(OFFLINE_ISOLATED))
    data["cpus"]["7"] = {"socket": 0, "numa": 0, "core": 3, "l3": 0}
    data["online"] = "0-6"
    path = tmp_path / "topo.json"
    path.write_text(json.dumps(data))

    lines = _invalid(_check("0-1,7,16-17", "--topology", str(path)))

    assert lines == ["error: weka.io/cores-ids='0-1,7,16-17' names CPU(s) that are not online: "
                     "16-17 (not in the topology), 7 (offline); online: 0-6"]


def test_an_offline_cpu_the_sysfs_tree_no_longer_describes_is_not_in_the_topology(
        tmp_path: Path) -> None:
    lines = _invalid(_check("7", "--sysfs-root", str(_tree(tmp_path, OFFLINE_ISOLATED))))

    assert lines == ["error: weka.io/cores-ids='7' names CPU(s) that are not online: "
                     "7 (not in the topology); online: 0-6"]


def test_no_nameable_memory_node_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "topo.json"
    path.write_text(json.dumps({"cpus": {"0": {"socket": 0, "numa": 0, "core": 0},
                                         "1": {"socket": 0, "numa": 1, "core": 1}},
                                "memory_nodes": [0]}))

    lines = _invalid(_check("1", "--topology", str(path)))

    assert lines == ["error: weka.io/cores-ids='1': cannot determine NUMA memory nodes for CPUs "
                     "1: NUMA node 1 has no memory and no known distance to a node with memory"]


# -- bad input -----------------------------------------------------------------------------------


def test_a_bad_topology_file_is_exit_code_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "topo.json"
    path.write_text(json.dumps({"cpus": {"0": {"socket": 0, "core": 0}}}))

    result = _check("0", "--topology", str(path))

    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f'error: {path}: cpus["0"]: missing "numa"']


def test_a_missing_topology_file_is_exit_code_2(tmp_path: Path) -> None:
    result = _check("0", "--topology", str(tmp_path / "nope.json"))

    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'nope.json'}: cannot be read: No such file or directory"]


def test_a_broken_sysfs_tree_is_exit_code_2(tmp_path: Path) -> None:
    result = _check("0", "--sysfs-root", str(tmp_path))

    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path}/devices/system/cpu/online: required file is missing"]


def test_both_topology_options_are_a_usage_error(tmp_path: Path) -> None:
    result = _check("0", "--sysfs-root", str(tmp_path), "--topology", str(tmp_path / "t.json"))

    assert result.exit_code == 2
    assert "mutually exclusive" in result.stderr
    assert "Traceback" not in result.output


def test_a_missing_value_is_a_usage_error() -> None:
    result = CliRunner().invoke(check_annotation, [])

    assert result.exit_code == 2
    assert "Missing argument 'VALUE'" in result.stderr


# -- help and registration -----------------------------------------------------------------------


def test_help_has_a_real_example() -> None:
    result = CliRunner().invoke(check_annotation, ["--help"])

    assert result.exit_code == 0
    assert "Example:\n    nri-cpuset check-annotation 0-3,56-59\n" in result.stdout


def test_it_runs_as_a_subcommand_of_a_group(tmp_path: Path) -> None:
    @click.group()
    def group() -> None:
        pass

    group.add_command(check_annotation)
    result = CliRunner().invoke(group, ["check-annotation", "0-1", "--topology",
                                        _file(tmp_path, DUAL_SOCKET_HT)])

    assert result.exit_code == 0, result.output
    assert "canonical   0-1" in result.stdout


# -- the device-hints annotations --------------------------------------------------------------


@pytest.mark.parametrize(("key", "value", "says"), [
    ("device-hints.nri-cpuset.io/pod", "false",
     "every container of the pod will ignore the NUMA nodes of its devices when placed"),
    ("device-hints.nri-cpuset.io/container.pg", "true",
     "container 'pg' will take the NUMA nodes of its devices when placed"),
])
def test_a_valid_device_hints_value_says_what_it_does(key: str, value: str, says: str) -> None:
    result = _check(value, "--key", key)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [f"valid: {key}={value}", f"  {says}"]


def test_a_bad_device_hints_value_is_refused_in_the_plugins_words() -> None:
    result = _check("no", "--key", "device-hints.nri-cpuset.io/pod")
    assert result.exit_code == 3
    assert result.output.strip() == ("error: annotation device-hints.nri-cpuset.io/pod='no' is "
                                     "invalid: expected 'true' or 'false'")


def test_an_unknown_key_is_refused_naming_the_ones_it_checks() -> None:
    result = _check("1", "--key", "example.com/thing")
    assert result.exit_code == 3
    assert "unknown annotation 'example.com/thing'" in result.output


# -- every workload annotation -------------------------------------------------------------------


@pytest.mark.parametrize("toggle", TOGGLES, ids=lambda t: t.feature)
def test_every_workload_annotation_is_checked_and_says_what_true_and_false_do(
        toggle: Toggle) -> None:
    said = []
    for key, value in ((toggle.pod_key, "true"), (toggle.container_prefix + "app", "false")):
        result = _check(value, "--key", key)
        assert result.exit_code == 0, result.output
        first, effect = result.output.splitlines()
        assert first == f"valid: {key}={value}"
        said.append(effect)
    assert said[0].startswith("  every container of the pod will ")
    assert said[1].startswith("  container 'app' will ")
    assert said[0].removeprefix("  every container of the pod") != said[1].removeprefix(
        "  container 'app'")


@pytest.mark.parametrize("toggle", TOGGLES, ids=lambda t: t.feature)
def test_a_bad_workload_annotation_is_refused_in_the_plugins_words(toggle: Toggle) -> None:
    result = _check("True", "--key", toggle.container_prefix + "app")
    assert result.exit_code == 3
    assert result.output.strip() == (f"error: annotation {toggle.container_prefix}app='True' is "
                                     f"invalid: expected 'true' or 'false'")


def test_the_unknown_key_error_lists_every_workload_annotation() -> None:
    result = _check("true", "--key", "cpus.nri-cpuset.io/pod")
    assert result.exit_code == 3
    for toggle in TOGGLES:
        assert toggle.feature in result.output


@pytest.mark.parametrize(("key", "value", "effect"), [
    ("irq-load-balancing.crio.io", "disable", "(interrupts off)"),
    ("cpu-c-states.crio.io", "max_latency:10", "(idle states over 10 µs off)"),
    ("cpu-freq-governor.crio.io", "performance", "(governor performance)"),
    ("cpu-c-states.crio.io", "enable", "asks nothing of them"),
])
def test_crios_quiet_cpu_annotations_are_checked_as_the_plugin_reads_them(
        key: str, value: str, effect: str) -> None:
    result = _check(value, "--key", key)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"valid: {key}={value}\n")
    assert effect in result.output


def test_a_crio_value_the_plugin_does_not_understand_is_invalid_in_its_words() -> None:
    result = _check("off", "--key", "cpu-c-states.crio.io")
    assert result.exit_code == 3
    assert result.stderr == ("error: annotation cpu-c-states.crio.io='off' is invalid: expected "
                             "'enable' or 'disable' or 'max_latency:<µs>'\n")

