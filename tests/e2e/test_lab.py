"""Smoke tests of the e2e lab on a real containerd, 1.7.24 or 2.1.x (no NRI plugin involved yet):
CRI works like a kubelet's, cpusets read back from the cgroup and from /proc, live updates,
restarts.
"""

from __future__ import annotations

import os
import socket
import stat
import uuid

import pytest

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import container_resources, guaranteed

pytestmark = pytest.mark.e2e


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_containerd_reports_its_version_over_cri(lab: LabContainerd, cri: KubeletClient) -> None:
    version = cri.version()
    assert version.runtime_name == "containerd"
    assert version.runtime_version.startswith(lab.runtime.version)  # 1.7.24~ds1, 2.1.9+unknown
    assert version.runtime_api_version == "v1"


def test_lab_image_is_known_to_cri(lab: LabContainerd, cri: KubeletClient) -> None:
    image = cri.image_status(lab.image)
    assert image is not None
    assert lab.image in image.repo_tags
    assert cri.image_status("docker.io/library/not-there:never") is None


def test_burstable_container_runs_on_all_online_cpus(lab: LabContainerd,
                                                     cri: KubeletClient) -> None:
    uid = str(uuid.uuid4())
    parent = cgroup_parent(QosClass.BURSTABLE, uid)
    assert parent == f"/kubepods/burstable/pod{uid}"
    with cri.pod(PodSpec(name="burstable", uid=uid, cgroup_parent=parent)) as pod:
        cid = cri.run_container(pod, "app", lab.image,
                                resources=container_resources(cpu_request="250m",
                                                              memory_limit="64Mi"))
        status = cri.container_status(cid)
        assert status.running
        assert status.pid is not None
        assert status.cgroups_path == f"{parent}/{cid}"
        assert cgroupfs.process_cgroup(status.pid) == status.cgroups_path
        if cgroupfs.cgroup_version() == 1:
            assert cgroupfs.cgroup_dir(status.cgroups_path) == cgroupfs.CGROUP_ROOT.joinpath(
                "cpuset", "kubepods", "burstable", f"pod{uid}", cid)

        online = cgroups.online_cpus()
        cgroup = cgroupfs.container_cpuset(status.cgroups_path)
        assert cgroup.effective_cpus == online
        assert cgroup.effective_mems == cgroups.online_mems()
        if cgroup.version == 1:  # v2 may leave cpuset.cpus empty (= inherit)
            assert cgroup.cpus == online
        affinity = cgroups.process_affinity(status.pid)
        assert affinity.cpus == online
        assert affinity.mems == cgroups.online_mems()
        # What the kubelet asked for is what containerd recorded.
        assert status.resources is not None
        assert status.resources.cpu_shares == 256
        assert status.resources.memory_limit == 64 * 2**20


def test_cri_cpuset_cpus_reaches_the_cgroup_and_the_process(
        lab: LabContainerd, cri: KubeletClient) -> None:
    if 1 not in cgroups.online_cpus():
        pytest.skip("needs CPU 1 online")
    uid = str(uuid.uuid4())
    with cri.pod(PodSpec(name="pinned", uid=uid,
                         cgroup_parent=cgroup_parent(QosClass.GUARANTEED, uid))) as pod:
        resources = guaranteed(1, "64Mi")
        assert (resources.cpu_quota, resources.cpu_period, resources.cpu_shares) == (
            100_000, 100_000, 1024)
        cid = cri.create_container(
            pod, cri.pod_config(pod), "app", lab.image, cpu_quota=resources.cpu_quota,
            cpu_period=resources.cpu_period, cpu_shares=resources.cpu_shares,
            memory_limit=resources.memory_limit, cpuset_cpus="1")
        cri.start(cid)
        status = cri.container_status(cid)
        assert status.pid is not None
        assert status.cgroups_path == f"/kubepods/pod{uid}/{cid}"
        assert cgroupfs.container_cpuset(status.cgroups_path).effective_cpus == CPUSet([1])
        assert cgroupfs.process_cpuset(status.pid).effective_cpus == CPUSet([1])
        assert cgroups.process_affinity(status.pid).cpus == CPUSet([1])


def test_update_container_resources_changes_the_cpuset_live(
        lab: LabContainerd, cri: KubeletClient) -> None:
    online = cgroups.online_cpus()
    if len(online) < 2:
        pytest.skip("needs two online CPUs")
    first, last = online.first(), online.last()
    uid = str(uuid.uuid4())
    with cri.pod(PodSpec(name="live", uid=uid,
                         cgroup_parent=cgroup_parent(QosClass.BURSTABLE, uid))) as pod:
        cid = cri.run_container(pod, "app", lab.image,
                                resources=container_resources(cpu_request="100m"))
        before = cri.container_status(cid)
        assert before.pid is not None
        assert before.cgroups_path is not None
        assert cgroups.process_affinity(before.pid).cpus == online

        for target in (CPUSet([last]), CPUSet([first]), online):
            cri.update_resources(cid, cpuset_cpus=target.format())
            after = cri.container_status(cid)
            assert after.running
            assert after.pid == before.pid  # same process, updated in place
            assert cgroupfs.container_cpuset(before.cgroups_path).effective_cpus == target
            assert cgroups.process_affinity(before.pid).cpus == target
            assert after.resources is not None
            assert CPUSet.parse(after.resources.cpuset_cpus) == target
            assert after.resources.cpu_shares == 102  # fields sent as 0 are left alone


def test_nri_socket_is_served_at_the_configured_path(lab: LabContainerd) -> None:
    assert lab.config.nri_enabled
    mode = lab.nri_socket.stat().st_mode
    assert stat.S_ISSOCK(mode)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(lab.nri_socket))  # containerd accepts external plugins there


def test_containers_survive_a_containerd_restart_and_a_crash(
        lab: LabContainerd, cri: KubeletClient) -> None:
    uid = str(uuid.uuid4())
    with cri.pod(PodSpec(name="durable", uid=uid,
                         cgroup_parent=cgroup_parent(QosClass.BURSTABLE, uid))) as pod:
        cid = cri.run_container(pod, "app", lab.image)
        pid = cri.container_status(cid).pid
        assert pid is not None

        old = lab.pid
        version = lab.restart()
        assert lab.pid != old
        assert version.runtime_version.startswith(lab.runtime.version)
        status = cri.container_status(cid)
        assert (status.running, status.pid) == (True, pid)
        assert _alive(pid)

        lab.kill()
        assert _alive(pid)  # the shim keeps the container
        lab.start()
        assert cri.container_status(cid).pid == pid
        # CRI works again: a new container in the same pod starts.
        second = cri.run_container(pod, "second", lab.image)
        assert cri.container_status(second).running
        assert {c.id for c in cri.list_containers(pod)} == {cid, second}


def test_cri_failures_carry_the_status_code_and_the_runtime_message(
        lab: LabContainerd, cri: KubeletClient) -> None:
    uid = str(uuid.uuid4())
    with cri.pod(PodSpec(name="broken", uid=uid,
                         cgroup_parent=cgroup_parent(QosClass.BEST_EFFORT, uid))) as pod:
        with pytest.raises(CriError) as caught:
            cri.create_container(pod, None, "app", "docker.io/library/not-there:never")
        assert caught.value.method == "CreateContainer"
        assert caught.value.code_name == "NOT_FOUND"
        assert "not-there" in caught.value.details
    with pytest.raises(CriError) as caught:
        cri.container_status("no-such-container")
    assert caught.value.code_name == "NOT_FOUND"


def test_stopped_and_removed_pods_leave_no_container_cgroup(
        lab: LabContainerd, cri: KubeletClient) -> None:
    uid = str(uuid.uuid4())
    parent = cgroup_parent(QosClass.BURSTABLE, uid)
    with cri.pod(PodSpec(name="gone", uid=uid, cgroup_parent=parent)) as pod:
        cid = cri.run_container(pod, "app", lab.image)
        path = cgroupfs.cgroup_dir(f"{parent}/{cid}")
        assert path.is_dir()
        cri.stop(cid)
        cri.remove(cid)
        assert not path.exists()
    assert cri.list_pods() == []
    lab.cleanup()
    assert not cgroupfs.cgroup_dir(parent).exists()
