"""The pre-installed launcher: containerd runs it with an empty environment, so every choice
(the interpreter, the config file) is written into it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cpuset_cli.main import cli


def install(tmp_path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["install-launcher", "--plugin-dir", str(tmp_path),
                                      "--log-file", "/var/log/x.log", *args])
    assert result.exit_code == 0, result.output
    return (tmp_path / "99-nri-cpuset").read_text()


def test_the_launcher_runs_with_the_config_file(tmp_path: Path) -> None:
    text = install(tmp_path, "--config", "/etc/nri-cpuset/config.toml")
    assert "run --sysfs-root /sys --config /etc/nri-cpuset/config.toml \"$@\"" in text
    # The file's runtime.cri_socket applies unless the flag was given.
    assert "--cri-socket" not in text


def test_a_relative_config_path_is_made_absolute(tmp_path: Path) -> None:
    # containerd starts plugins in its own working directory.
    text = install(tmp_path, "--config", "conf/config.toml")
    assert f"--config {Path.cwd() / 'conf/config.toml'}" in text


def test_an_explicit_cri_socket_is_written_into_the_launcher(tmp_path: Path) -> None:
    text = install(tmp_path, "--cri-socket", "/run/k3s/containerd/containerd.sock")
    assert "--cri-socket /run/k3s/containerd/containerd.sock" in text
    assert "--config" not in text
