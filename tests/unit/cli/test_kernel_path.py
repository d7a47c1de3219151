"""Which path other containers' cpuset updates take, as the composition root chooses it: the
kernel first when ``runtime.cgroup_root`` is a writable cpuset hierarchy and
``runtime.kernel_updates`` is on, the runtime only otherwise, with the reason said at start;
and the key reloaded live."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap
from cpuset_cli.daemon.live_config import LiveConfig
from cpuset_cli.daemon.plugin import Daemon
from tests.unit.core.topologies import OFFLINE_ISO


def daemon(root: Path, *, kernel_updates: bool = True) -> Daemon:
    return bootstrap.build_daemon(StaticTopologySource(OFFLINE_ISO), environ={}, name="nri-cpuset",
                                  index="99", status_socket=None, listen=None,
                                  cgroup_root=str(root), kernel_updates=kernel_updates)


def test_a_root_without_a_cpuset_hierarchy_leaves_every_update_to_the_runtime_and_says_why(
        tmp_path: Path) -> None:
    built = daemon(tmp_path)
    assert built.kernel_path == (f"through the runtime only: no cpuset hierarchy at "
                                 f"{tmp_path / 'cpuset'}")
    assert not built.service.pusher.kernel.active
    assert built.kernel_view is None


def test_a_writable_v1_tree_writes_the_kernel_first(tmp_path: Path) -> None:
    (tmp_path / "cpuset").mkdir()
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-3\n")
    built = daemon(tmp_path)
    assert built.kernel_path.startswith(f"kernel first (cgroup v1 under {tmp_path})")
    assert built.kernel_path.endswith("systemd scopes: files only (systemd sets no cpuset on "
                                      "cgroup v1)")
    assert built.service.pusher.kernel.active
    assert built.kernel_view is not None


def test_a_writable_v2_tree_sets_systemd_scopes_units_too_unless_switched_off(
        tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpuset\n")
    built = daemon(tmp_path)
    assert built.kernel_path.endswith("systemd scopes: AllowedCPUs/AllowedMemoryNodes set over "
                                      "D-Bus before their files")
    assert built.request_budget is not None
    off = bootstrap.build_daemon(StaticTopologySource(OFFLINE_ISO), environ={},
                                 name="nri-cpuset", index="99", status_socket=None,
                                 listen=None, cgroup_root=str(tmp_path), systemd_units=False)
    assert off.kernel_path.endswith("systemd scopes: files only (runtime.systemd_units = false)")


def test_kernel_updates_off_says_so_and_keeps_the_writer_for_a_reload(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpuset\n")
    built = daemon(tmp_path, kernel_updates=False)
    assert built.kernel_path == "through the runtime only: runtime.kernel_updates = false"
    assert not built.service.pusher.kernel.active
    built.service.pusher.kernel.switch(enabled=True)
    assert built.service.pusher.kernel.active


def test_kernel_updates_is_reloaded_live(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    (tmp_path / "cpuset").mkdir()
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-3\n")
    file = tmp_path / "config.toml"
    file.write_text(f'[runtime]\ncgroup_root = "{tmp_path}"\nkernel_updates = true\n')
    config = LiveConfig.load(file, required=True, topology=OFFLINE_ISO,
                             overrides={"runtime": {"status_socket": ""},
                                        "observability": {"listen": ""}})
    built = bootstrap.build_daemon(StaticTopologySource(OFFLINE_ISO), environ={},
                                   name="nri-cpuset", index="99", config=config)
    assert built.service.pusher.kernel.active
    file.write_text(f'[runtime]\ncgroup_root = "{tmp_path}"\nkernel_updates = false\n')
    stat = file.stat()
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    config.reload_file("SIGHUP")
    assert not built.service.pusher.kernel.active
    assert "SIGHUP: applied runtime.kernel_updates = false" in caplog.text
    assert "other containers' cpuset updates: through the runtime only" in caplog.text


def test_systemd_units_is_reloaded_live(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    (tmp_path / "cgroup.controllers").write_text("cpuset\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpuset\n")
    file = tmp_path / "config.toml"
    file.write_text(f'[runtime]\ncgroup_root = "{tmp_path}"\n')
    config = LiveConfig.load(file, required=True, topology=OFFLINE_ISO,
                             overrides={"runtime": {"status_socket": ""},
                                        "observability": {"listen": ""}})
    built = bootstrap.build_daemon(StaticTopologySource(OFFLINE_ISO), environ={},
                                   name="nri-cpuset", index="99", config=config)
    scopes = built.service.pusher.kernel.updater
    assert getattr(scopes, "enabled", None) is True
    file.write_text(f'[runtime]\ncgroup_root = "{tmp_path}"\nsystemd_units = false\n')
    stat = file.stat()
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    config.reload_file("SIGHUP")
    assert getattr(scopes, "enabled", None) is False
    assert "SIGHUP: applied runtime.systemd_units = false" in caplog.text
    assert "left to the runtime (runtime.systemd_units = false)" in caplog.text
