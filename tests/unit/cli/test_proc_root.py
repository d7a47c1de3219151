"""``--proc-root``: where the daemon writes interrupt affinities for quiet CPUs (the host's
``/proc/irq`` as the DaemonSet's quiet-cpus component mounts it, since a container's own is
read-only), from the command line through to the node's port; ``/proc`` by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cpuset_adapters.quiet.applier import QuietApplier
from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap
from cpuset_cli.daemon import serve
from cpuset_cli.main import cli
from cpuset_lab.machines import DUAL_SOCKET_HT, OFFLINE_ISOLATED, build_topology, write_sysfs_tree


class FakeDaemon:
    async def run_until_signalled(self) -> None:
        return None


def given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *flags: str) -> dict[str, Any]:
    """The keyword arguments ``run`` built its daemon with."""
    built: dict[str, Any] = {}

    def build_daemon(*_args: Any, **kwargs: Any) -> FakeDaemon:
        built.update(kwargs)
        return FakeDaemon()

    monkeypatch.setattr(serve.bootstrap, "build_daemon", build_daemon)
    monkeypatch.setattr(serve, "DEFAULT_PATH", str(tmp_path / "default.toml"))
    monkeypatch.setattr(serve, "configure_logging", lambda _observability: None)
    write_sysfs_tree(OFFLINE_ISOLATED, tmp_path / "sys")
    result = CliRunner().invoke(cli, ["run", "--sysfs-root", str(tmp_path / "sys"),
                                      "--containerd-config", "/nonexistent",
                                      "--allow-static-cpu-manager", *flags])
    assert result.exit_code == 0, result.output
    return built


def test_run_hands_the_proc_root_to_the_daemon(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert given(tmp_path, monkeypatch, "--proc-root", "/host/proc")["proc_root"] == "/host/proc"


def test_the_proc_root_is_the_hosts_proc_by_default(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert given(tmp_path, monkeypatch)["proc_root"] == "/proc"


def test_the_daemons_quiet_cpus_write_irqs_under_the_proc_root(tmp_path: Path) -> None:
    daemon = bootstrap.build_daemon(StaticTopologySource(build_topology(DUAL_SOCKET_HT)),
                                    environ={}, name="nri-cpuset", index="99",
                                    socket_path="/nonexistent", proc_root=str(tmp_path / "proc"),
                                    quiet_journal=str(tmp_path / "journal.json"))
    node = daemon.service.quiet.node
    assert isinstance(node, QuietApplier)
    assert node.host.irq_root == tmp_path / "proc" / "irq"
    assert node.host.default_affinity == str(tmp_path / "proc/irq/default_smp_affinity")
