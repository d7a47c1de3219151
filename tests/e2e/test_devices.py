"""Device locality and alignment on a real containerd (1.7 or 2.x): the device nodes a kubelet
gives a container (CRI ``devices``) reach the plugin through NRI as ``linux.devices`` and are
resolved in sysfs; a strict alignment policy refuses what cannot be aligned, in the runtime's
CreateContainer error, changing nothing else.

This host has one NUMA node and its PCI functions report ``numa_node`` -1, so the tests that
need a device on a known node run the plugin on a sysfs tree of their own: the host's real
``devices/system`` (its CPUs) beside PCI functions laid out as the kernel lays them out, with
the host's own ``/dev/loop0`` (7:0) and ``/dev/null`` (1:3) behind them. Real devices on real
NUMA nodes are the VM lab's (tests/vm/test_devices.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_core import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import Device, QosClass
from cpuset_lab.resources import guaranteed
from tests.e2e.plugin_harness import Plugin, actual, inspect_state, pod, serving, shared
from tests.support.fake_sysfs import device_behind, host_block_devices, pci_function

pytestmark = pytest.mark.e2e

LOOP = Device(host_path="/dev/loop0", container_path="/dev/fake-disk", permissions="r")
NULL = Device(host_path="/dev/null", container_path="/dev/fake-nic", permissions="r")


def pci_block_device() -> tuple[str, str, int] | None:
    """A block device of this host behind a PCI function: (/dev path, function, numa_node)."""
    for disk in host_block_devices():
        if disk.function is not None and Path(f"/dev/{disk.name}").exists():
            return f"/dev/{disk.name}", disk.function, disk.numa_node
    return None


def container_view(plugin: Plugin, cid: str) -> dict[str, object]:
    (found,) = [c for c in inspect_state(plugin.status)["containers"] if c["id"] == cid]
    return found


def run_integer(cri: KubeletClient, lab: LabContainerd, pod_id: str, *devices: Device) -> str:
    return cri.run_container(pod_id, "app", lab.image, resources=guaranteed(1, "64Mi"),
                             devices=devices)


def test_a_pci_device_reaches_the_plugin_through_nri_and_is_read_from_the_real_sysfs(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    found = pci_block_device()
    if found is None:
        pytest.skip("this host has no block device behind a PCI function")
    path, function, node = found
    with pod(cri, "disk", QosClass.GUARANTEED) as pod_id:
        cid = run_integer(cri, lab, pod_id,
                          Device(host_path=path, container_path="/dev/data", permissions="r"))
        reason = str(container_view(plugin, cid)["reason"])
        where = f"NUMA node {node}" if node >= 0 else f"no hint, numa_node is {node}"
        number = os.stat(path).st_rdev
        # NRI names the device as the container sees it, with the host's device number.
        assert (f"/dev/data ({os.major(number)}:{os.minor(number)}) (PCI {function}): {where}"
                in reason), reason
        assert container_view(plugin, cid)["devices"] == (str(node) if node >= 0 else "")


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    """This host's CPUs, /dev/loop0 behind a function on NUMA node 0 and /dev/null behind one
    on node 1 (a node the host does not have: only the hint uses it)."""
    tree = tmp_path / "sys"
    (tree / "devices").mkdir(parents=True)
    (tree / "devices" / "system").symlink_to("/sys/devices/system")
    disk = pci_function(tree, "devices/pci0000:00", "0000:00:07.0", "0")
    device_behind(tree, "block/7:0", disk, "block/loop0")
    nic = pci_function(tree, "devices/pci0000:40", "0000:41:00.0", "1")
    device_behind(tree, "char/1:3", nic, "net/fake0")
    return tree


@pytest.fixture
def aligned_plugin(lab: LabContainerd, tmp_path: Path, sysfs: Path) -> Iterator[Plugin]:
    config = tmp_path / "config.toml"
    config.write_text('[cpus]\nalignment = "single-numa-node"\n'
                      '[observability]\nlog_format = "console"\n')
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--sysfs-root", str(sysfs), "--config", str(config)))) as running:
        yield running


def test_a_device_on_a_known_node_places_the_container_near_it(
        aligned_plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "disk", QosClass.GUARANTEED) as pod_id:
        cid = run_integer(cri, lab, pod_id, LOOP)
        view = container_view(aligned_plugin, cid)
        assert view["devices"] == "0"
        assert ("devices on NUMA node 0 (/dev/fake-disk (7:0) (PCI 0000:00:07.0): NUMA node 0)"
                in str(view["reason"])), view["reason"]
        assert "near its devices (NUMA node 0)" in str(view["reason"])
        assert actual(cri, cid)[0] == CPUSet.parse(str(view["cpus"]))


def test_single_numa_node_refuses_devices_on_two_nodes_and_nothing_else_changes(
        aligned_plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        before = actual(cri, app)
        with pod(cri, "both", QosClass.GUARANTEED) as pod_id:
            with pytest.raises(CriError) as caught:
                run_integer(cri, lab, pod_id, LOOP, NULL)
            assert cri.list_containers(pod_id) == []
        assert ("1 exclusive CPU(s) cannot be aligned under the single-numa-node policy "
                "([cpus] alignment): its devices (and pod) are on NUMA nodes 0-1: a "
                "container's CPUs and devices must share one node") in caught.value.details
        assert "nri-cpuset" in caught.value.details
        assert actual(cri, app) == before
        assert "topology-affinity" in aligned_plugin.text()
