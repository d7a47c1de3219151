"""The hotplug watcher on a fake sysfs tree, and the daemon applying what it finds.

Real CPU hot-unplug is not tried anywhere in the suite: the e2e machine is a Firecracker VM
that may hang when a CPU is taken offline. A fake tree whose ``online`` file is rewritten is
what the kernel's view looks like to the plugin.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from cpuset_adapters.hotplug import OnlineCpuWatcher
from cpuset_adapters.nri.handler_port import RuntimeInfo
from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_cli import bootstrap
from cpuset_core import ContainerUpdate, CPUSet, Topology
from cpuset_lab.machines import DUAL_SOCKET_HT, write_sysfs_tree
from tests.builders.nri import container, pod


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    write_sysfs_tree(DUAL_SOCKET_HT, tmp_path)  # 16 CPUs online
    return tmp_path


def online_file(root: Path) -> Path:
    return root / "devices" / "system" / "cpu" / "online"


def watcher(root: Path, interval: float = 2.0) -> OnlineCpuWatcher:
    return OnlineCpuWatcher(online_file(root), SysfsTopologySource(root), interval=interval)


def test_no_change_means_no_topology_read(sysfs: Path) -> None:
    assert asyncio.run(watcher(sysfs).changed(CPUSet.parse("0-15"))) is None


def test_a_cpu_going_offline_gives_the_new_topology(sysfs: Path) -> None:
    online_file(sysfs).write_text("0-14\n")
    topology = asyncio.run(watcher(sysfs).changed(CPUSet.parse("0-15")))
    assert topology is not None
    assert topology.online == CPUSet.parse("0-14")
    assert 15 in topology.known  # still described: it may come back


def test_an_unreadable_online_file_is_logged_once_and_counts_as_no_change(
        sysfs: Path, caplog: pytest.LogCaptureFixture) -> None:
    online_file(sysfs).write_text("0-,\n")
    watching = watcher(sysfs)

    async def twice() -> list[Topology | None]:
        return [await watching.changed(CPUSet.parse("0-15")) for _ in range(2)]

    with caplog.at_level(logging.WARNING, logger="nri_cpuset.hotplug"):
        assert asyncio.run(twice()) == [None, None]
    assert len([r for r in caplog.records if "cannot read the CPU topology" in r.message]) == 1


def test_a_non_positive_interval_is_refused(sysfs: Path) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        watcher(sysfs, interval=0)


class RecordingSession:
    """Stands in for the NRI session: records UpdateContainers batches."""

    connected = True

    def __init__(self) -> None:
        self.batches: list[dict[str, str]] = []

    async def apply_updates(self, updates: Sequence[ContainerUpdate], *,
                            timeout: float | None = None) -> None:
        self.batches.append({u.container_id: u.cpus.format() for u in updates})

    def quiet_for(self) -> float:
        return 60.0  # the runtime has been quiet: calls of the plugin's own may go


def test_the_daemon_moves_containers_off_a_cpu_that_went_offline_and_back(sysfs: Path) -> None:
    daemon = bootstrap.build_daemon(SysfsTopologySource(sysfs), environ={}, name="nri-cpuset",
                                    index="99", socket_path="/nonexistent",
                                    hotplug_interval=0.01)
    session = RecordingSession()
    daemon.session = session  # type: ignore[assignment]
    handler = daemon.handler
    web, db = pod("web", qos="burstable"), pod("db")
    handler.on_synchronize([], [])
    handler.on_create_container(web, container("app", web))
    adjust, _ = handler.on_create_container(db, container("pg", db, cpus=1))
    assert adjust is not None
    held = CPUSet.parse(adjust.linux.resources.cpu.cpus)
    gone = held.first()
    assert daemon.watcher is not None

    async def scenario() -> None:
        watching = asyncio.create_task(daemon.watcher.run(  # type: ignore[union-attr]
            lambda: daemon.service.engine.topology.online, daemon.topology_changed))
        online_file(sysfs).write_text((CPUSet.parse("0-15") - CPUSet([gone])).format())
        while daemon.service.engine.topology.online == CPUSet.parse("0-15") or not session.batches:
            await asyncio.sleep(0.01)
        online_file(sysfs).write_text("0-15\n")
        while daemon.service.engine.topology.online != CPUSet.parse("0-15"):
            await asyncio.sleep(0.01)
        watching.cancel()

    asyncio.run(asyncio.wait_for(scenario(), timeout=30))
    moved = daemon.service.ledger.entries["id-pg-0123456789"].cpus
    assert gone not in moved
    offline_batches = [b for batch in session.batches[:3] for b in batch.items()]
    assert ("id-pg-0123456789", moved.format()) in offline_batches
    # Back online: the shared pool grows by the CPU that returned.
    final = session.batches[-1]
    assert final == {"id-app-0123456789": (CPUSet.parse("0-15") - moved).format()}
    assert daemon.service.engine.shared_pool() == CPUSet.parse("0-15") - moved
    history = daemon.service.history()["id-pg-0123456789"]
    assert any("moved at topology change" in e for e in history)


def test_pre_installed_on_an_older_runtime_a_hotplug_move_rides_on_answers(sysfs: Path) -> None:
    """Without the kernel fast path, a pre-installed plugin on a runtime whose NRI locks can
    deadlock (no NRI version in Configure: before v0.12) makes no UpdateContainers call for a
    CPU gone offline: the move waits for the next answer (decision 51)."""
    daemon = bootstrap.build_daemon(SysfsTopologySource(sysfs),
                                    environ={"NRI_PLUGIN_SOCKET": "3"}, name="nri-cpuset",
                                    index="99", hotplug_interval=0.01, kernel_updates=False)
    session = RecordingSession()
    daemon.session = session  # type: ignore[assignment]
    handler = daemon.handler
    # containerd 2.1 (NRI v0.8): it sends timeouts, not its NRI version.
    handler.on_configure(RuntimeInfo(runtime_name="containerd", runtime_version="2.1.9",
                                     registration_timeout_ms=5000, request_timeout_ms=2000))
    handler.on_synchronize([], [])
    db = pod("db")
    adjust, _ = handler.on_create_container(db, container("pg", db, cpus=1))
    assert adjust is not None
    gone = CPUSet.parse(adjust.linux.resources.cpu.cpus).first()
    online_file(sysfs).write_text((CPUSet.parse("0-15") - CPUSet([gone])).format())
    asyncio.run(daemon.topology_changed(SysfsTopologySource(sysfs).read_topology()))
    assert session.batches == []
    assert "id-pg-0123456789" in daemon.service.pusher.pending()
    late = pod("late", qos="burstable")
    _, updates = handler.on_create_container(late, container("app", late))
    assert "id-pg-0123456789" in {u.container_id for u in updates}
