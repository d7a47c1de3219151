"""``nri-cpuset run``: nothing starts on an invalid configuration or a fatal startup check
(exit code 2, the reason on stderr); the file supplies defaults and explicit flags win."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cpuset_cli.daemon import serve
from cpuset_cli.daemon.live_config import LiveConfig
from cpuset_cli.main import cli
from cpuset_lab.machines import OFFLINE_ISOLATED, write_sysfs_tree


class FakeDaemon:
    async def run_until_signalled(self) -> None:
        return None


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[LiveConfig]:
    """The configurations daemons were built with (none are really started)."""
    built: list[LiveConfig] = []

    def build_daemon(*_args: Any, config: LiveConfig, **_kwargs: Any) -> FakeDaemon:
        built.append(config)
        return FakeDaemon()

    monkeypatch.setattr(serve.bootstrap, "build_daemon", build_daemon)
    monkeypatch.setattr(serve, "DEFAULT_PATH", str(tmp_path / "default.toml"))
    monkeypatch.setattr(serve, "configure_logging", lambda _observability: None)
    return built


@pytest.fixture
def sysfs(tmp_path: Path) -> str:
    root = tmp_path / "sys"
    write_sysfs_tree(OFFLINE_ISOLATED, root)
    return str(root)


def run(sysfs: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["run", "--sysfs-root", sysfs,
                                    "--containerd-config", "/nonexistent", *args])


def config_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return str(path)


def test_an_invalid_config_exits_2_naming_every_key_and_value_and_starts_nothing(
        tmp_path: Path, sysfs: str, started: list[LiveConfig]) -> None:
    path = config_file(tmp_path, '[cpus]\nreserved = "5-9"\n[observability]\nlistn = ":1"\n')
    result = run(sysfs, "--config", path)
    assert result.exit_code == 2
    assert f"error: invalid configuration {path}" in result.stderr
    assert "observability.listn: unknown key (did you mean listen?" in result.stderr
    assert started == []
    machine = run(sysfs, "--config", config_file(tmp_path, '[cpus]\nreserved = "5-9"\n'))
    assert machine.exit_code == 2
    assert 'cpus.reserved = "5-9": CPU(s) 7-9 are offline or do not exist' in machine.stderr


def test_a_named_config_file_that_does_not_exist_exits_2(tmp_path: Path, sysfs: str,
                                                         started: list[LiveConfig]) -> None:
    result = run(sysfs, "--config", str(tmp_path / "absent.toml"))
    assert result.exit_code == 2
    assert "absent.toml (1 problem):\n  the file does not exist" in result.stderr
    assert started == []


def test_without_config_the_defaults_apply_when_the_default_file_is_absent(
        sysfs: str, started: list[LiveConfig]) -> None:
    result = run(sysfs, "--allow-static-cpu-manager")
    assert result.exit_code == 0, result.output
    assert started[0].current.pinning.namespaces == ("*",)
    assert started[0].file_document is None


def test_the_static_cpu_manager_stops_the_start_unless_allowed(
        tmp_path: Path, sysfs: str, started: list[LiveConfig]) -> None:
    state = tmp_path / "cpu_manager_state"
    state.write_text('{"policyName":"static","defaultCpuSet":"0-6"}')
    path = config_file(tmp_path, f'[runtime]\nkubelet_cpu_manager_state = "{state}"\n')
    refused = run(sysfs, "--config", path)
    assert refused.exit_code == 2
    assert "error: the kubelet's static CPU manager is active" in refused.stderr
    assert started == []
    assert run(sysfs, "--config", path, "--allow-static-cpu-manager").exit_code == 0
    allowed = config_file(tmp_path, f'[runtime]\nkubelet_cpu_manager_state = "{state}"\n'
                                    "allow_static_cpu_manager = true\n")
    assert run(sysfs, "--config", allowed).exit_code == 0
    assert len(started) == 2


def test_the_file_supplies_defaults_and_only_explicit_flags_override_it(
        tmp_path: Path, sysfs: str, started: list[LiveConfig]) -> None:
    path = config_file(tmp_path, '[runtime]\nnri_socket = "/run/file/nri.sock"\n'
                                 'status_socket = "/run/file/status.sock"\n'
                                 'cri_socket = "/run/file/cri.sock"\n'
                                 '[observability]\nlog_level = "warning"\n')
    # --nri-socket given with the built-in default's value still counts: it was given.
    result = run(sysfs, "--config", path, "--status-socket", "", "--nri-socket",
                 "/var/run/nri/nri.sock")
    assert result.exit_code == 0, result.output
    runtime = started[0].current.runtime
    assert runtime.status_socket == ""
    assert runtime.nri_socket == "/var/run/nri/nri.sock"
    assert runtime.cri_socket == "/run/file/cri.sock"
    assert started[0].current.observability.log_level == "warning"
    assert run(sysfs, "--config", path, "--log-level", "debug").exit_code == 0
    assert started[1].current.observability.log_level == "debug"


def test_publish_topology_turns_the_publisher_on_over_the_file(
        tmp_path: Path, sysfs: str, started: list[LiveConfig]) -> None:
    path = config_file(tmp_path, '[topology_publisher]\npolicy = "single-numa-node"\n')
    assert run(sysfs, "--config", path).exit_code == 0
    assert run(sysfs, "--config", path, "--publish-topology").exit_code == 0
    off, on = started
    assert off.current.topology_publisher.enabled is False
    assert on.current.topology_publisher.enabled is True
    assert on.current.topology_publisher.policy == "single-numa-node"


def test_events_turns_the_events_on_over_the_file(
        tmp_path: Path, sysfs: str, started: list[LiveConfig]) -> None:
    path = config_file(tmp_path, "[events]\nqueue_capacity = 7\n")
    assert run(sysfs, "--config", path).exit_code == 0
    assert run(sysfs, "--config", path, "--events").exit_code == 0
    off, on = started
    assert off.current.events.enabled is False
    assert (on.current.events.enabled, on.current.events.queue_capacity) == (True, 7)
