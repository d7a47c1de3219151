"""The lab containerd as ``containerd.service`` (the VM lab's systemd shape): the unit file
systemd reads, and the systemd cgroup driver it runs with."""

from __future__ import annotations

from pathlib import Path

from cpuset_lab.containerd_service import UNIT, ServiceContainerd, unit_text


def test_the_unit_keeps_containers_across_restarts_and_delegates_their_cgroups() -> None:
    text = unit_text(containerd=Path("/lab/bin/containerd"), config=Path("/w/config.toml"),
                     log=Path("/w/containerd.log"), path="/lab/bin:/usr/bin", home=Path("/w"))
    lines = text.splitlines()
    assert lines[0] == "[Unit]"
    service = lines[lines.index("[Service]") + 1:]
    assert "ExecStart=/lab/bin/containerd --config /w/config.toml" in service
    assert "Environment=PATH=/lab/bin:/usr/bin HOME=/w LANG=C.UTF-8" in service
    # KillMode=process: a restart stops containerd, not the shims and their containers.
    for line in ("Type=notify", "Delegate=yes", "KillMode=process", "Restart=no",
                 "StandardOutput=append:/w/containerd.log"):
        assert line in service


def test_the_service_runs_with_the_systemd_cgroup_driver(tmp_path: Path) -> None:
    lab = ServiceContainerd(tmp_path / "w", unit_dir=tmp_path / "units")
    assert lab.config.systemd_cgroup
    assert lab.unit_path == tmp_path / "units" / UNIT
    assert not lab.running
    assert lab.pid is None
