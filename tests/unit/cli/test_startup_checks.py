"""Startup checks: each takes paths and says what it found, with what to do about it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from cpuset_adapters.config import Config, Cpus, Runtime, TopologyPublisher
from cpuset_cli.daemon.startup_checks import (
    declared_policy_not_enforced,
    nri_disabled,
    nri_socket_missing,
    run_checks,
    static_cpu_manager,
)


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "nri.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    yield path
    server.close()


def state(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cpu_manager_state"
    path.write_text(text)
    return path


def test_the_static_cpu_manager_is_found_in_the_kubelets_state_file(tmp_path: Path) -> None:
    path = state(tmp_path, '{"policyName":"static","defaultCpuSet":"0-1","checksum":1}')
    message = static_cpu_manager(path)
    assert message is not None
    assert f"{path} has policyName \"static\"" in message
    assert "runtime.allow_static_cpu_manager = true" in message
    assert "--allow-static-cpu-manager" in message


@pytest.mark.parametrize("text", ['{"policyName":"none","defaultCpuSet":""}', "not json",
                                  "[]", '{"policyName": 1}'])
def test_another_policy_or_an_unreadable_state_file_is_not_the_static_manager(
        tmp_path: Path, text: str) -> None:
    assert static_cpu_manager(state(tmp_path, text)) is None


def test_no_state_file_means_no_static_cpu_manager(tmp_path: Path) -> None:
    assert static_cpu_manager(tmp_path / "absent") is None


def test_a_missing_nri_socket_says_which_containerd_setting_enables_nri(tmp_path: Path) -> None:
    message = nri_socket_missing(tmp_path / "nri.sock")
    assert message is not None
    assert "does not exist" in message
    assert "waiting for it" in message
    assert '[plugins."io.containerd.nri.v1.nri"]' in message
    assert "disable = false" in message


def test_a_file_that_is_not_a_socket_is_named(tmp_path: Path) -> None:
    plain = tmp_path / "nri.sock"
    plain.write_text("")
    message = nri_socket_missing(plain)
    assert message is not None
    assert "is not a socket" in message


def test_a_listening_socket_is_fine(listening: Path) -> None:
    assert nri_socket_missing(listening) is None


@pytest.mark.parametrize(("text", "disabled"), [
    ('version = 2\n[plugins."io.containerd.nri.v1.nri"]\n  disable = true\n', True),
    ('version = 2\n[plugins."io.containerd.nri.v1.nri"]\n  disable = false\n', False),
    ("version = 2\n", False),
    ("plugins = 3\n", False),
    ("not toml [", False),
])
def test_nri_disabled_in_containerds_config_is_detected(tmp_path: Path, text: str,
                                                        disabled: bool) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text)
    message = nri_disabled(config)
    assert (message is not None) is disabled
    if message:
        assert f"{config} sets `disable = true`" in message


def _config(tmp_path: Path, *, allow: bool = False, socket_path: Path | None = None) -> Config:
    return Config(runtime=Runtime(
        kubelet_cpu_manager_state=str(state(tmp_path, '{"policyName":"static"}')),
        allow_static_cpu_manager=allow,
        nri_socket=str(socket_path or tmp_path / "absent.sock")))


def test_the_static_cpu_manager_is_fatal_unless_allowed(tmp_path: Path, listening: Path,
                                                       ) -> None:
    found = run_checks(_config(tmp_path, socket_path=listening), launched_by_runtime=False,
                       containerd_config=tmp_path / "none")
    assert [f.fatal for f in found] == [True]
    allowed = run_checks(_config(tmp_path, allow=True, socket_path=listening),
                         launched_by_runtime=False, containerd_config=tmp_path / "none")
    assert allowed == []


def test_a_missing_socket_is_a_warning_but_fatal_when_containerd_disables_nri(
        tmp_path: Path) -> None:
    config = _config(tmp_path, allow=True)
    found = run_checks(config, launched_by_runtime=False, containerd_config=tmp_path / "none")
    assert [(f.fatal, "waiting for it" in f.message) for f in found] == [(False, True)]
    containerd = tmp_path / "containerd.toml"
    containerd.write_text('[plugins."io.containerd.nri.v1.nri"]\ndisable = true\n')
    found = run_checks(config, launched_by_runtime=False, containerd_config=containerd)
    assert [(f.fatal, "NRI is disabled" in f.message) for f in found] == [(True, True)]


def test_a_plugin_the_runtime_started_does_not_look_for_the_socket(tmp_path: Path) -> None:
    assert run_checks(_config(tmp_path, allow=True), launched_by_runtime=True,
                      containerd_config=tmp_path / "none") == []


@pytest.mark.parametrize(("enabled", "declared", "alignment", "warned"), [
    (True, "single-numa-node", "best-effort", True),
    (True, "single-numa-node", "none", True),
    (True, "single-numa-node", "single-numa-node", False),
    (True, "single-numa-node", "restricted", False),  # the object declares the enforced one
    (True, "best-effort", "best-effort", False),
    (False, "single-numa-node", "best-effort", False),  # nothing is declared
])
def test_a_declared_single_numa_node_policy_the_node_does_not_enforce_is_a_warning(
        tmp_path: Path, enabled: bool, declared: str, alignment: str, warned: bool) -> None:
    config = attrs.evolve(
        _config(tmp_path, allow=True),
        cpus=Cpus(alignment=alignment),
        topology_publisher=TopologyPublisher(enabled=enabled, policy=declared))
    message = declared_policy_not_enforced(config)
    assert (message is not None) is warned
    found = run_checks(config, launched_by_runtime=True, containerd_config=tmp_path / "none")
    assert [(f.fatal, f.message) for f in found] == ([(False, message)] if warned else [])
    if message:
        assert f'cpus.alignment = "{alignment}" does not enforce it' in message
