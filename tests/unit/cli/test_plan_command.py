"""``nri-cpuset plan`` through the composition root, on fixture trees and on this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import cpuset_core
from cpuset_cli.main import cli
from cpuset_lab.machines import DUAL_SOCKET_HT, OFFLINE_ISOLATED, write_sysfs_tree


@pytest.fixture
def dual_socket(tmp_path: Path) -> Path:
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path)
    return tmp_path


def _plan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["plan", *args])
    return result.exit_code, result.output


def _json_rows(*args: str) -> list[dict[str, str]]:
    result = CliRunner().invoke(cli, ["plan", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, str]] = json.loads(result.stdout)
    return rows


def test_demo_on_a_dual_socket_machine_moves_the_integer_pod_for_the_pin(dual_socket: Path) -> None:
    rows = _json_rows("--demo", "--sysfs-root", str(dual_socket))
    by_container = {r["container"]: r for r in rows if r["action"] == "create"}
    assert by_container["default/db/postgres"]["kind"] == "integer"
    # A quarter of 16 CPUs = 4: two whole cores (siblings are n and n+8).
    assert by_container["default/db/postgres"]["cpus"] == "0-1,8-9"
    moves = [r for r in rows if r["action"].strip() == "live update"
             and r["container"] == "default/db/postgres"]
    assert moves, "the pin on the integer pod's CPU should move it"
    assert by_container["storage/typo/io"]["result"].startswith("REJECTED invalid-annotation")
    assert by_container["storage/ghost/io"]["result"].startswith("REJECTED cpu-unavailable")


def test_demo_gives_pinned_pods_the_memory_node_of_their_cpus(tmp_path: Path) -> None:
    write_sysfs_tree(OFFLINE_ISOLATED, tmp_path)
    pinned = [r for r in _json_rows("--demo", "--sysfs-root", str(tmp_path))
              if r["kind"] == "annotated"]
    assert pinned
    assert all(r["mems"] == "0" for r in pinned)


@pytest.mark.skipif(not Path("/sys/devices/system/cpu/online").exists(), reason="no sysfs")
def test_demo_runs_on_this_machines_real_topology() -> None:
    code, output = _plan("--demo")
    assert code == 0, output
    assert "default/web/app" in output
    assert "REJECTED invalid-annotation" in output


def test_a_broken_sysfs_tree_is_a_clear_error_with_exit_code_2(tmp_path: Path) -> None:
    (tmp_path / "devices" / "system" / "cpu").mkdir(parents=True)
    code, output = _plan("--demo", "--sysfs-root", str(tmp_path))
    assert code == 2
    assert "online" in output
    assert "Traceback" not in output


def test_plan_without_demo_says_what_to_pass() -> None:
    code, output = _plan()
    assert code == 2
    assert "--demo" in output


def test_version_is_printed_and_is_the_engines() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"nri-cpuset, version {cpuset_core.__version__}\n"


def test_config_file_reaches_the_dry_run(dual_socket: Path, tmp_path: Path) -> None:
    # The demo pins CPUs from the "storage" namespace; allowing only "weka" refuses them, and
    # reserving CPUs 0-1,8-9 moves the integer pod off them: the dry run decides like the node.
    config = tmp_path / "config.toml"
    config.write_text('[pinning]\nnamespaces = ["weka"]\n[cpus]\nreserved = "0-1,8-9"\n')
    rows = _json_rows("--demo", "--sysfs-root", str(dual_socket), "--config", str(config))
    by_container = {r["container"]: r for r in rows if r["action"] == "create"}
    assert by_container["storage/cache/io"]["result"].startswith(
        "REJECTED pin-namespace-not-allowed")
    assert by_container["default/db/postgres"]["cpus"] == "2-3,10-11"  # 0-1,8-9 without it


def test_an_invalid_config_file_is_a_clear_error_with_exit_code_2(dual_socket: Path,
                                                                  tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[cpus]\nreserved = "0-x"\n')
    code, output = _plan("--demo", "--sysfs-root", str(dual_socket), "--config", str(config))
    assert code == 2
    assert 'cpus.reserved = "0-x": invalid CPU list' in output
