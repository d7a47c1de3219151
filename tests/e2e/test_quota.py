"""Exclusive CPUs without CFS quota on a real containerd (1.7 or 2.x), read back from the kernel
(cgroup v1 ``cpu.cfs_quota_us``, v2 ``cpu.max``) while the runtime's record (what CRI's
``ContainerStatus`` reports and the kubelet turns into ``status.resources``) keeps the
kubelet's quota (issue 44): lifted at creation, kept lifted by a resize that stays integer,
the kubelet's quota back after a resize to a fraction of a CPU, a restarted plugin that
still finds the container integer on its CPUs, ``[cpus] exclusive_cpu_quota = "kubelet"``
keeping the kubelet's quota until a reload lifts it at the next resize (decision 44), and
the limit the runtime reports following a grow and a shrink, across a restart and a
Synchronize (decision 54).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters.cgroupfs import cgroup_dir, cgroup_version
from cpuset_adapters.cri.results import Resources
from cpuset_core.quota import UNLIMITED
from cpuset_lab import cgroups
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import container_resources, guaranteed
from cpuset_lab.status_resources import runtime_cpu_limit
from tests.e2e.plugin_harness import (
    ONLINE,
    Plugin,
    cli,
    cpus,
    inspect_state,
    integer,
    needs_two_cpus,
    pod,
    serving,
    shared,
    wait_until,
)

pytestmark = pytest.mark.e2e

PERIOD = 100_000
CONSOLE = '[observability]\nlog_format = "console"\n'


def quota(cri: KubeletClient, cid: str) -> int:
    """The container's CFS quota as the kernel enforces it (-1: none)."""
    path = cri.container_status(cid).cgroups_path
    assert path is not None
    return cgroups.cfs_quota(path)


def recorded_quota(cri: KubeletClient, cid: str) -> object:
    """The quota in the container's OCI spec as the runtime records it (``crictl inspect``)."""
    spec = cri.container_status(cid).info.get("info", {})
    value: Any = spec.get("runtimeSpec", {}) if isinstance(spec, dict) else {}
    for key in ("linux", "resources", "cpu", "quota"):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def fractional(millis: int) -> Resources:
    """A Guaranteed container's resources with a limit of ``millis`` m."""
    return container_resources(cpu_request=f"{millis}m", cpu_limit=f"{millis}m",
                               memory_limit="64Mi")


@needs_two_cpus
def test_exclusive_cpus_run_without_quota_and_a_resize_to_a_fraction_restores_it(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        assert quota(cri, pg) == UNLIMITED
        assert recorded_quota(cri, pg) == PERIOD  # the record keeps the kubelet's (issue 44)
        with pod(cri, "side", QosClass.GUARANTEED) as side:
            sidecar = cri.run_container(side, "sidecar", lab.image, resources=fractional(500))
            assert quota(cri, sidecar) == 50_000  # shared: the kubelet's quota stays
        # Gone, so that the pool may give the growth its CPU.
        cri.update_resources(pg, guaranteed(2, "64Mi"))
        assert cpus(cri, pg) == ONLINE
        assert quota(cri, pg) == UNLIMITED  # the request's 200000 was lifted again
        cri.update_resources(pg, fractional(1500))
        assert quota(cri, pg) == 150_000  # shared again: the kubelet's new quota
        cri.update_resources(pg, guaranteed(1, "64Mi"))
        assert len(cpus(cri, pg)) == 1
        assert quota(cri, pg) == UNLIMITED
        history = cli("explain", "--status-socket", str(plugin.status), pg).stdout
        assert "- created: integer" in history
        assert history.count("cfs_quota=unlimited") == 3, history  # created, 1 -> 2, -> 1


@needs_two_cpus
def test_a_restarted_plugin_finds_an_unthrottled_container_integer_on_its_cpus(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web, pod(cri, "db", QosClass.GUARANTEED) as db:
        app = shared(cri, lab, web)
        pg = integer(cri, lab, db, 1, "postgres")
        mine = cpus(cri, pg)
        assert quota(cri, pg) == UNLIMITED
        plugin.kill()
        plugin.start()
        plugin.wait_synchronized(2)
        # The runtime now reports no quota for it: a rebuild must still see 1 whole CPU.
        state = inspect_state(plugin.status)
        kinds = {c["id"]: (c["kind"], c["cpus"]) for c in state["containers"]}
        assert kinds[pg] == ("integer", mine.format())
        assert cpus(cri, app) == ONLINE - mine
        assert cpus(cri, pg) == mine
        assert quota(cri, pg) == UNLIMITED


@pytest.fixture
def kubelet_quota(lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> Iterator[Plugin]:
    """The plugin configured to keep the kubelet's quota (``exclusive_cpu_quota``)."""
    config = tmp_path / "config.toml"
    config.write_text(CONSOLE + '[cpus]\nexclusive_cpu_quota = "kubelet"\n')
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--config", str(config)))) as running:
        yield running


def test_the_kubelets_quota_stays_when_configured_and_a_reload_lifts_it_at_the_next_resize(
        kubelet_quota: Plugin, lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> None:
    with pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        assert quota(cri, pg) == PERIOD
        (tmp_path / "config.toml").write_text(CONSOLE + '[cpus]\nexclusive_cpu_quota = '
                                                        '"unlimited"\n')
        assert kubelet_quota.process is not None
        kubelet_quota.process.send_signal(signal.SIGHUP)
        wait_until(lambda: 'applied cpus.exclusive_cpu_quota = "unlimited"'
                   in kubelet_quota.text(), "the reload")
        assert quota(cri, pg) == PERIOD  # running containers keep theirs until resized
        cri.update_resources(pg, guaranteed(1, "64Mi"))
        assert quota(cri, pg) == UNLIMITED


def runtime_limit(cri: KubeletClient, cid: str) -> int | None:
    """The CPU limit (millicores) the runtime's CRI ``ContainerStatus.resources`` gives, as the
    kubelet derives it (``toKubeContainerResources``): what becomes ``status.resources``."""
    return runtime_cpu_limit(cri.container_status(cid).resources)


def put_back_the_kubelets_quota(cri: KubeletClient, cid: str) -> None:
    """Write one CPU's quota into the container's cgroup, behind the plugin's back."""
    path = cri.container_status(cid).cgroups_path
    assert path is not None
    directory = cgroup_dir(path, controller="cpu")
    if cgroup_version() == 2:
        (directory / "cpu.max").write_text(f"{PERIOD} {PERIOD}")
    else:
        (directory / "cpu.cfs_quota_us").write_text(str(PERIOD))


def settles_unthrottled(cri: KubeletClient, cid: str, millis: int, what: str) -> None:
    """Wait until the runtime reports the spec's limit and the kernel enforces no quota."""
    wait_until(lambda: runtime_limit(cri, cid) == millis and quota(cri, cid) == UNLIMITED,
               f"{what}: limit {millis}m reported (now {runtime_limit(cri, cid)}) and no "
               f"quota in the kernel (now {quota(cri, cid)})")


@needs_two_cpus
def test_after_a_resize_the_runtime_reports_the_new_limit_while_the_kernel_has_no_quota(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    """Issue 44: the kubelet reads a container's CPU limit from the quota the runtime reports;
    the record keeps the kubelet's quota and only the kernel runs without it, through a grow,
    a shrink, a restarted plugin and a Synchronize after a reconnect."""
    with pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        settles_unthrottled(cri, pg, 1000, "created")
        assert cri.status_cpu_limit(pg) == "1"
        cri.update_resources(pg, guaranteed(2, "64Mi"))
        assert cpus(cri, pg) == ONLINE
        settles_unthrottled(cri, pg, 2000, "grown to 2")
        assert cri.status_cpu_limit(pg) == "2"
        plugin.kill()
        plugin.start()
        plugin.wait_synchronized(2)
        settles_unthrottled(cri, pg, 2000, "after a restart")
        lab.restart()
        plugin.wait_synchronized(3)
        settles_unthrottled(cri, pg, 2000, "after a reconnect's Synchronize")
        assert cpus(cri, pg) == ONLINE
        cri.update_resources(pg, guaranteed(1, "64Mi"))
        assert len(cpus(cri, pg)) == 1
        settles_unthrottled(cri, pg, 1000, "shrunk to 1")
        assert cri.status_cpu_limit(pg) == "1"
        plugin.kill()
        plugin.start()
        plugin.wait_synchronized(4)
        settles_unthrottled(cri, pg, 1000, "after a second restart")
        assert cri.status_cpu_limit(pg) == "1"
        # What any runtime update does (it writes the record's quota): the verifier lifts it.
        put_back_the_kubelets_quota(cri, pg)
        assert quota(cri, pg) == PERIOD
        wait_until(lambda: quota(cri, pg) == UNLIMITED, "the verifier lifting it")
        assert "cause=quota" in plugin.text()
        assert runtime_limit(cri, pg) == 1000
