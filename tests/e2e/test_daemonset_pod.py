"""The DaemonSet's pod run as the kubelet runs it, on the lab's containerd (1.7 or 2.x; issue
33): the image ``scripts/build-image`` built, ``deploy/kubernetes`` as ``kubectl apply -k``
renders it, translated into CRI calls (``cpuset_lab.daemonset``), the plugin inside doing its
whole job. One pod serves the module, in order: ready (its figures printed), placements read
back from the kernel, bad input refused, the ConfigMap edited and reloaded, drift repaired
through its mounts, its container killed and re-created, then an upgrade.

Run: ``bash scripts/test e2e-pod`` (``e2e-pod-2x``), after ``bash scripts/build-image``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.daemonset import update_configmap
from cpuset_lab.daemonset.lab_host import container_memory
from cpuset_lab.daemonset.running import RunningPod, probe_status, start_pod, upgrade
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from tests.e2e.daemonset_harness import (
    drift_repaired,
    import_daemonset_image,
    job_problems,
    port_free,
    translated,
    wait_for_message,
)
from tests.e2e.plugin_harness import (
    ONLINE,
    actual,
    cpus,
    integer,
    needs_two_cpus,
    pod,
    shared,
    wait_until,
)

pytestmark = pytest.mark.e2e

REFUSED = "namespace 'default' may not use the annotation weka.io/cores-ids"


@dataclass(slots=True)
class Node:
    """The lab's node with the DaemonSet's pod on it (``running``: the current pod)."""

    lab: LabContainerd
    client: KubeletClient
    root: Path
    image: str
    running: RunningPod
    ready_seconds: float


@pytest.fixture(scope="module")
def node(lab: LabContainerd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    image = import_daemonset_image(lab)
    root = tmp_path_factory.mktemp("daemonset")
    client = lab.client()
    daemonset = translated(lab, root, image)
    assert port_free(daemonset), "something already answers on the pod's probe port"
    running = start_pod(client, daemonset)
    holder: list[Node] = []
    try:
        holder.append(Node(lab=lab, client=client, root=root, image=image, running=running,
                           ready_seconds=running.wait_ready()))
        yield holder[0]
    finally:
        (holder[0].running if holder else running).stop()
        lab.cleanup()


def proc_status(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def root_mount_options(pid: int) -> list[str]:
    """The mount options of the process's ``/`` (``/proc/<pid>/mountinfo``)."""
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == "/":
            return fields[5].split(",")
    raise AssertionError(f"no / in /proc/{pid}/mountinfo")


def test_the_pod_becomes_ready_confined_as_the_manifest_says(
        node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    running = node.running
    # docs/operations.md's overlay named the image: the lab replaced nothing but host paths
    # and the network (the lab has no CNI).
    assert {o.path.rsplit(".", 1)[-1] for o in running.pod.overrides} <= {"path",
                                                                           "hostNetwork"}
    assert running.kubelet_probe("liveness")
    assert running.kubelet_probe("readiness")
    status = running.status()
    assert status.pid is not None
    assert status.cgroups_path is not None
    assert status.cgroups_path.startswith(f"/kubepods/burstable/pod{running.pod.uid}/")
    process = proc_status(status.pid)
    assert process["Uid"].split()[0] == "0"
    assert int(process["CapEff"], 16) == 0
    assert int(process["CapBnd"], 16) == 0
    assert process["NoNewPrivs"] == "1"
    assert process["Seccomp"] == "2"  # filtered: RuntimeDefault
    assert "ro" in root_mount_options(status.pid)
    wait_for_message(running, "registered with the runtime as 99-nri-cpuset")
    memory = container_memory(status.cgroups_path)
    with capsys.disabled():
        print(f"\n[daemonset pod, containerd {node.lab.runtime.name}] CreateContainer to "
              f"/readyz 200: {node.ready_seconds:.2f} s; RSS (cgroup memory.stat "
              f"{'rss' if cgroups.cgroup_version() == 1 else 'anon'}) "
              f"{memory.rss / 2**20:.1f} MiB, VmRSS {process['VmRSS']}, cgroup usage "
              f"{memory.usage / 2**20:.1f} MiB")


@needs_two_cpus
def test_shared_integer_and_pinned_pods_are_placed(node: Node) -> None:
    client, lab, last = node.client, node.lab, ONLINE.last()
    plugin = node.running.container_id
    with pod(client, "web", QosClass.BURSTABLE) as web:
        app = shared(client, lab, web)
        assert cpus(client, app) == ONLINE
        with pod(client, "io", QosClass.BURSTABLE, pins=str(last)) as io:
            pinned = shared(client, lab, io, "io")
            assert actual(client, pinned) == (CPUSet([last]), CPUSet([0]))
            assert cpus(client, app) == ONLINE - CPUSet([last])
            assert cpus(client, plugin) == ONLINE - CPUSet([last])  # a shared container too
        wait_until(lambda: cpus(client, app) == ONLINE, "the pool to grow back")
        with pod(client, "db", QosClass.GUARANTEED) as db:
            exclusive = integer(client, lab, db, 1, "postgres")
            mine = cpus(client, exclusive)
            assert len(mine) == 1
            assert cpus(client, app) == ONLINE - mine


def test_a_malformed_pin_is_refused_in_the_plugins_words(node: Node) -> None:
    client, lab = node.client, node.lab
    with pod(client, "bad", QosClass.BURSTABLE, pins="0,,1") as bad:
        with pytest.raises(CriError) as caught:
            shared(client, lab, bad)
        assert ("annotation weka.io/cores-ids='0,,1' is invalid: empty element at position 2"
                in caught.value.details)
        assert "nri-cpuset" in caught.value.details
        assert client.list_containers(bad) == []


def refused(node: Node) -> str:
    """A pin from ``default`` tried; the runtime's error ("" when admitted)."""
    with pod(node.client, "pinned", QosClass.BURSTABLE, pins=str(ONLINE.last())) as pod_id:
        try:
            shared(node.client, node.lab, pod_id, "io")
        except CriError as error:
            return error.details
        return ""


def test_the_configmap_edited_the_kubelets_way_is_reloaded_live(node: Node) -> None:
    running = node.running
    [volume] = running.pod.config_maps
    text = volume.files["config.toml"]
    assert 'namespaces = ["*"]' in text
    assert refused(node) == ""
    update_configmap(volume.directory, {
        "config.toml": text.replace('namespaces = ["*"]', 'namespaces = ["storage"]')})
    wait_for_message(running, 'file change: applied pinning.namespaces = ["storage"]')
    assert REFUSED in refused(node)
    update_configmap(volume.directory, {"config.toml": text})
    wait_for_message(running, 'file change: applied pinning.namespaces = ["*"]')
    assert refused(node) == ""


@needs_two_cpus
def test_drift_is_repaired_through_the_pods_cgroup_mount(node: Node) -> None:
    assert drift_repaired(node.client, node.lab)
    wait_for_message(node.running, "drift found")  # the pod's plugin did it
    wait_for_message(node.running, "drift repaired")


@needs_two_cpus
def test_its_container_killed_and_recreated_rebuilds_every_placement(node: Node) -> None:
    client, lab, running, last = node.client, node.lab, node.running, ONLINE.last()
    with pod(client, "web", QosClass.BURSTABLE) as web:
        app = shared(client, lab, web)
        running.kill()
        assert probe_status(running.probe("readiness")) is None
        with pod(client, "io", QosClass.BURSTABLE, pins=str(last)) as io:
            pinned = shared(client, lab, io, "io")
            assert cpus(client, pinned) == ONLINE  # nobody placed it: the plugin is down
            running.restart()
            assert running.attempt == 1
            running.wait_ready()
            wait_until(lambda: (cpus(client, pinned), cpus(client, app))
                       == (CPUSet([last]), ONLINE - CPUSet([last])),
                       "the re-created plugin's Synchronize correcting the pods")


@needs_two_cpus
def test_an_upgrade_with_max_surge_0_corrects_pods_created_in_the_gap(node: Node) -> None:
    client, lab, last = node.client, node.lab, ONLINE.last()
    new_image = f"{node.image}-next"
    lab.ctr("images", "tag", "--force", node.image, new_image)
    new = translated(lab, node.root, new_image)
    old = node.running
    assert new.uid != old.pod.uid
    with contextlib.ExitStack() as stack:
        app = shared(client, lab, stack.enter_context(pod(client, "web", QosClass.BURSTABLE)))
        gap: list[str] = []

        def in_the_gap() -> None:
            assert port_free(new)
            io = stack.enter_context(pod(client, "io", QosClass.BURSTABLE, pins=str(last)))
            gap.append(shared(client, lab, io, "io"))
            assert cpus(client, gap[0]) == ONLINE  # unplaced: no plugin

        node.running = upgrade(old, new, gap=in_the_gap)
        assert old.sandbox_id not in {p.id for p in client.list_pods()}
        node.running.wait_ready()
        assert client.container_status(node.running.container_id).info["info"]["config"][
            "image"]["image"] == new_image
        wait_until(lambda: (cpus(client, gap[0]), cpus(client, app))
                   == (CPUSet([last]), ONLINE - CPUSet([last])),
                   "the new pod's Synchronize correcting the pod created in the gap")
    assert job_problems(node.running, client, lab) == []
