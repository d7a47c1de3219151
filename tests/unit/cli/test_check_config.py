"""``nri-cpuset check-config``: what ``run`` would refuse, checked without starting."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cpuset_cli.main import cli
from cpuset_lab.machines import DUAL_SOCKET_HT, write_sysfs_tree


def _check(tmp_path: Path, text: str, *args: str) -> tuple[int, str]:
    sysfs = tmp_path / "sys"
    write_sysfs_tree(DUAL_SOCKET_HT, sysfs)
    config = tmp_path / "config.toml"
    config.write_text(text)
    result = CliRunner().invoke(cli, ["check-config", "--config", str(config), "--sysfs-root",
                                      str(sysfs), "--preinstalled", *args])
    return result.exit_code, result.output


def test_a_valid_file_passes_with_exit_code_0(tmp_path: Path) -> None:
    code, output = _check(tmp_path, '[cpus]\nreserved = "0,8"\n'
                                    f'[runtime]\nkubelet_cpu_manager_state = "{tmp_path}/none"\n')
    assert code == 0, output
    assert "valid for this machine (online CPUs 0-15)" in output


def test_every_problem_is_named_with_exit_code_2(tmp_path: Path) -> None:
    code, output = _check(tmp_path, '[cpus]\nreserved = "16"\nreservd = "0"\n')
    assert code == 2
    assert "cpus.reservd: unknown key" in output


def test_a_value_this_machine_cannot_have_is_refused(tmp_path: Path) -> None:
    code, output = _check(tmp_path, '[cpus]\nreserved = "16"\n')
    assert code == 2
    assert 'cpus.reserved = "16": CPU(s) 16 are offline or do not exist' in output


def test_the_static_cpu_manager_is_refused_like_run_refuses_it(tmp_path: Path) -> None:
    state = tmp_path / "cpu_manager_state"
    state.write_text(json.dumps({"policyName": "static"}))
    code, output = _check(tmp_path, f'[runtime]\nkubelet_cpu_manager_state = "{state}"\n')
    assert code == 2
    assert "static CPU manager" in output
