"""The lab's containerd runtimes: choosing 1.7 or 2.x, each one's configuration, and the
runc handlers' cgroup driver."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cpuset_lab import faulty_runc
from cpuset_lab.__main__ import main as lab_main
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import (
    RUNTIMES,
    ContainerdNotInstalled,
    UnknownRuntime,
    find_installation,
    runtime_named,
)
from cpuset_lab.image import IMAGE_NAME


def _installation(tmp_path: Path, runtime: str) -> Path:
    """A fake unpacked containerd of ``runtime`` under the lab directory ``tmp_path``."""
    bin_dir = tmp_path / RUNTIMES[runtime].directory / "usr" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("containerd", "ctr", "containerd-shim-runc-v2"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir.parent.parent


def test_the_runtime_comes_from_the_environment_and_defaults_to_17(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NRI_CPUSET_RUNTIME", raising=False)
    assert runtime_named() is RUNTIMES["1.7"]
    monkeypatch.setenv("NRI_CPUSET_RUNTIME", "")
    assert runtime_named() is RUNTIMES["1.7"]
    monkeypatch.setenv("NRI_CPUSET_RUNTIME", "2.x")
    assert runtime_named() is RUNTIMES["2.x"]
    assert runtime_named("1.7") is RUNTIMES["1.7"]  # a name given wins over the environment
    assert (RUNTIMES["1.7"].config_version, RUNTIMES["2.x"].config_version) == (2, 3)


def test_an_unknown_runtime_is_named_with_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NRI_CPUSET_RUNTIME", "2.1.9")
    with pytest.raises(UnknownRuntime, match=r"'2\.1\.9' \(from NRI_CPUSET_RUNTIME\); the lab "
                                             r"knows 1\.7, 2\.x"):
        runtime_named()
    with pytest.raises(UnknownRuntime, match=r"unknown containerd runtime '3'; the lab knows"):
        find_installation(runtime="3")


@pytest.mark.skipif(not Path("/usr/sbin/runc").exists(), reason="bookworm's runc not installed")
def test_each_runtime_is_found_in_its_own_lab_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NRI_CPUSET_LAB", str(tmp_path))
    monkeypatch.setenv("NRI_CPUSET_RUNTIME", "2.x")
    with pytest.raises(ContainerdNotInstalled,
                       match=r"containerd 2\.x: missing .*containerd-2/usr/bin/containerd.*"
                             r"install-containerd --runtime 2\.x"):
        find_installation()
    prefix = _installation(tmp_path, "2.x")
    found = find_installation()
    assert (found.prefix, found.runtime, found.major) == (prefix, RUNTIMES["2.x"], 2)
    assert LabContainerd(tmp_path / "w", installation=found).runtime is RUNTIMES["2.x"]
    assert LabContainerd(tmp_path / "w").runtime is RUNTIMES["2.x"]  # none given: the env's
    with pytest.raises(ContainerdNotInstalled, match=r"containerd 1\.7: missing"):
        find_installation(runtime="1.7")
    assert find_installation(runtime="1.7", prefix=prefix).major == 1  # a prefix names no version


def test_containerd_2_config_is_version_3_with_the_cri_keys_where_2x_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Placement as ``containerd config default`` of 2.1.9 prints it (the e2e suite runs it)."""
    monkeypatch.setenv("NRI_CPUSET_RUNTIME", "2.x")
    lab = LabContainerd(tmp_path, request_timeout="1s")
    config = tomllib.loads(lab.config.text())
    assert config["version"] == 3
    plugins = config["plugins"]
    assert plugins["io.containerd.nri.v1.nri"]["plugin_request_timeout"] == "1s"
    images = plugins["io.containerd.cri.v1.images"]
    assert images["pinned_images"] == {"sandbox": IMAGE_NAME}
    runtime = plugins["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True
    assert runtime["cni"]["bin_dirs"] == [str(tmp_path / "cni" / "bin")]
    runtimes = runtime["containerd"]["runtimes"]
    assert runtimes["runc"]["options"]["BinaryName"] == "/usr/sbin/runc"
    assert runtimes[faulty_runc.HANDLER]["options"]["BinaryName"] == str(lab.config.faulty_runc)
    # What 1.7 kept in the gRPC plugin has moved; only streaming stays there.
    assert set(plugins["io.containerd.grpc.v1.cri"]) == {"stream_server_address",
                                                         "stream_server_port"}


@pytest.mark.parametrize(("argv", "message"), [
    (["demo", "--runtime", "3"], "unknown containerd runtime '3'; the lab knows 1.7, 2.x"),
    (["demo", "--runtime"], "usage: python -m cpuset_lab demo [--runtime NAME]"),
    (["demo", "2.x"], "usage: python -m cpuset_lab demo [--runtime NAME]"),
])
def test_the_lab_demo_refuses_a_bad_command_line_with_exit_code_2(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert lab_main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("runtime", "cri_plugin"), [
    ("1.7", "io.containerd.grpc.v1.cri"), ("2.x", "io.containerd.cri.v1.runtime")])
def test_the_systemd_cgroup_driver_is_a_switch_for_every_runc_handler(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: str, cri_plugin: str) -> None:
    monkeypatch.setenv("NRI_CPUSET_RUNTIME", runtime)

    def drivers(lab: LabContainerd) -> set[bool]:
        runtimes = tomllib.loads(lab.config.text())["plugins"][cri_plugin][
            "containerd"]["runtimes"]
        return {runtime["options"]["SystemdCgroup"] for runtime in runtimes.values()}

    assert drivers(LabContainerd(tmp_path)) == {False}
    assert drivers(LabContainerd(tmp_path, systemd_cgroup=True)) == {True}
