"""Per-workload requests (issue 32) on a real containerd (1.7 or 2.x), read back from the kernel:
a kube-system pod runs on the reserved CPUs and is moved live (same container, same process)
when the reserved set changes at a restart; an integer container that opts out runs on the
shared pool; a mixed container gets its whole CPU exclusive beside the shared pool with the
kubelet's quota kept; each bad annotation fails its container with the plugin's words and
changes nothing else. (The mixed container's live update with a changing pool needs more CPUs
than this machine has: tests/vm/test_workloads.py.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import Resources
from cpuset_core import CPUSet
from cpuset_lab import cgroups
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import container_resources
from tests.e2e.plugin_harness import (
    ONLINE,
    Plugin,
    actual,
    cli,
    cpus,
    integer,
    needs_two_cpus,
    pod,
    serving,
    shared,
    wait_until,
)

pytestmark = [pytest.mark.e2e, needs_two_cpus]

CONSOLE = '[observability]\nlog_format = "console"\n'
FIRST, LAST = ONLINE.first(), max(ONLINE) if ONLINE else 0
MIXED = {"mixed-cpus.nri-cpuset.io/pod": "true"}


def configured(tmp_path: Path, cpus_table: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(f"{CONSOLE}[cpus]\n{cpus_table}")
    return config


@pytest.fixture
def reserving(lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> Iterator[Plugin]:
    """The plugin with the first CPU reserved (kube-system's pods run there by default)."""
    config = configured(tmp_path, f'reserved = "{FIRST}"\n')
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--config", str(config)))) as running:
        yield running


def quota(cri: KubeletClient, cid: str) -> int:
    path = cri.container_status(cid).cgroups_path
    assert path is not None
    return cgroups.cfs_quota(path)


def fractional(millis: int) -> Resources:
    return container_resources(cpu_request=f"{millis}m", cpu_limit=f"{millis}m",
                               memory_limit="64Mi")


def test_a_system_pod_runs_on_the_reserved_cpus_and_moves_live_when_they_change(
        reserving: Plugin, lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> None:
    with pod(cri, "kube-proxy", QosClass.BURSTABLE, namespace="kube-system") as proxy_pod:
        proxy = shared(cri, lab, proxy_pod, "kube-proxy")
        assert cpus(cri, proxy) == CPUSet([FIRST])
        with pod(cri, "web", QosClass.BURSTABLE) as web:
            app = shared(cri, lab, web)
            assert cpus(cri, app) == ONLINE  # cpus.reserved is not strict: shared pods use it
            why = cli("explain", proxy, "--status-socket", str(reserving.status)).stdout
            assert "reserved" in why
            assert "namespace kube-system runs on the reserved CPUs" in why
            pid = cri.container_status(proxy).pid
            # The operator reserves another CPU; a restart re-decides running containers.
            assert reserving.stop() == 0
            configured(tmp_path, f'reserved = "{LAST}"\n')
            reserving.start()
            reserving.wait_synchronized(count=2)  # the log holds the first run's too
            # Synchronize's corrections are applied by the runtime after the plugin's answer
            # (and logged before it): read the kernel until they land.
            wait_until(lambda: cpus(cri, proxy) == CPUSet([LAST]),
                       "the Synchronize moving kube-proxy onto the new reserved CPU")
            assert cri.container_status(proxy).pid == pid
            assert cpus(cri, app) == ONLINE


def test_a_system_pod_that_opts_out_and_other_namespaces_stay_on_the_shared_pool(
        reserving: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    out = {"reserved-cpus.nri-cpuset.io/container.cni": "false"}
    with pod(cri, "cni", QosClass.BURSTABLE, namespace="kube-system", annotations=out) as cni:
        assert cpus(cri, shared(cri, lab, cni, "cni")) == ONLINE
    asking = {"reserved-cpus.nri-cpuset.io/pod": "true"}
    with pod(cri, "agent", QosClass.BURSTABLE, annotations=asking) as agent:
        assert cpus(cri, shared(cri, lab, agent, "agent")) == CPUSet([FIRST])


def test_an_integer_container_that_opts_out_runs_on_the_shared_pool_with_its_quota(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    opt_out = {"shared-cpus.nri-cpuset.io/pod": "true"}
    with pod(cri, "bursty", QosClass.GUARANTEED, annotations=opt_out) as bursty:
        app = integer(cri, lab, bursty, 1)
        assert cpus(cri, app) == ONLINE
        assert quota(cri, app) == 100_000  # shared: the kubelet's quota stays
        why = cli("explain", app, "--status-socket", str(plugin.status)).stdout
        assert "on the shared pool by shared-cpus.nri-cpuset.io/pod=true" in why


def test_a_mixed_container_gets_its_whole_cpu_exclusive_beside_the_shared_pool(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        with pod(cri, "mixed", QosClass.GUARANTEED, annotations=MIXED) as mixed_pod:
            mixed = cri.run_container(mixed_pod, "app", lab.image, resources=fractional(1500))
            assert cpus(cri, mixed) == ONLINE  # its own CPU and the pool
            pool = cpus(cri, app)
            assert len(pool) == len(ONLINE) - 1  # its exclusive CPU left the pool, live
            assert quota(cri, mixed) == 150_000  # 1.5 CPUs over more: the quota stays
            why = cli("explain", mixed, "--status-socket", str(plugin.status)).stdout
            assert "mixed" in why
            assert "1 exclusive CPU(s) and the shared pool by mixed-cpus.nri-cpuset.io/pod" in why
        assert cpus(cri, app) == ONLINE  # its CPU is back in the pool


@pytest.mark.parametrize(("namespace", "annotations", "message"), [
    ("default", {"mixed-cpus.nri-cpuset.io/pod": "yes"},
     "annotation mixed-cpus.nri-cpuset.io/pod='yes' is invalid: expected 'true' or 'false'"),
    ("default", {"shared-cpus.nri-cpuset.io/pod": "true",
                 "mixed-cpus.nri-cpuset.io/container.app": "true"},
     "annotations shared-cpus.nri-cpuset.io/pod and mixed-cpus.nri-cpuset.io/container.app are "
     "both true: exclusive CPUs beside the shared pool cannot be both declined and asked for"),
    ("team-b", {"reserved-cpus.nri-cpuset.io/pod": "true"},
     "namespace 'team-b' may not use the annotation reserved-cpus.nri-cpuset.io/pod "
     "(pin_namespaces allows: default, kube-system)"),
    ("default", {"reserved-cpus.nri-cpuset.io/pod": "true"},
     "reserved-cpus.nri-cpuset.io/pod=true asks for the reserved CPUs, and none is online "
     "(reserved: none)"),
])
def test_a_bad_request_fails_its_container_in_the_plugins_words(  # noqa: PLR0917
        lab: LabContainerd, cri: KubeletClient, tmp_path: Path, namespace: str,
        annotations: dict[str, str], message: str) -> None:
    config = configured(tmp_path, 'unmet_requests = "refuse"\n')
    config.write_text(config.read_text() + '[pinning]\nnamespaces = ["default", "kube-system"]\n')
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--config", str(config)))) as running:
        with pod(cri, "web", QosClass.BURSTABLE) as web:
            app = shared(cri, lab, web)
            before = actual(cri, app)
            with pod(cri, "bad", QosClass.GUARANTEED, namespace=namespace,
                     annotations=annotations) as bad:
                with pytest.raises(CriError) as caught:
                    cri.run_container(bad, "app", lab.image, resources=fractional(1500))
                assert message in caught.value.details
                assert "nri-cpuset" in caught.value.details
                assert cri.list_containers(bad) == []
            assert actual(cri, app) == before
        assert message in running.text()
