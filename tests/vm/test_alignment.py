"""The strict alignment policy, memory binding and exclusive CPUs without CFS quota (issue 31)
on real PCI devices on NUMA nodes 0 and 1, each read back from the guest's kernel: under
``single-numa-node`` a container given both nodes' NVMe disks is refused with the plugin's
words and nothing is created, one given one disk runs on its node; with ``bind_memory =
"exclusive"`` an integer container's ``cpuset.mems`` is its CPUs' node, and follows them when a
pin moves it; an integer container's ``cpu.max`` has no quota until a resize makes it shared.
Each setting is a live reload of the guest plugin's configuration, put back after the test.
"""

from __future__ import annotations

import pytest

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import Resources
from cpuset_core.cpuset import CPUSet
from cpuset_lab.pod_spec import Device, QosClass
from cpuset_lab.resources import container_resources, guaranteed
from tests.vm import kernel
from tests.vm.conftest import ShapeFacts
from tests.vm.devices import nvme_disk
from tests.vm.runtime import Guest, Pods, configured, wait_consistent


def test_single_numa_node_refuses_devices_on_both_nodes_and_places_one_on_its_node(
        guest: Guest, pods: Pods, shape: ShapeFacts) -> None:
    disk0, _ = nvme_disk(shape, 0)
    disk1, _ = nvme_disk(shape, 1)
    with configured('[cpus]\nalignment = "single-numa-node"\n'):
        pod = pods.pod("nvme", QosClass.GUARANTEED)
        with pytest.raises(CriError) as caught:
            pods.container(pod, "both", guaranteed(2, "64Mi"),
                           devices=[Device(host_path=disk0), Device(host_path=disk1)])
        assert ("2 exclusive CPU(s) cannot be aligned under the single-numa-node policy "
                "([cpus] alignment): its devices (and pod) are on NUMA nodes 0-1")\
            in caught.value.details, caught.value.details
        assert guest.cri.list_containers(pod) == []
        one = pods.container(pod, "one", guaranteed(2, "64Mi"), devices=[Device(host_path=disk1)])
        assert kernel.node_of(kernel.placement(guest.cri, one).cpus) == CPUSet([1])
    wait_consistent(guest)


def test_bound_memory_is_the_cpus_node_and_follows_them_when_a_pin_moves_the_container(
        guest: Guest, pods: Pods, shape: ShapeFacts) -> None:
    disk1, _ = nvme_disk(shape, 1)
    with configured('[cpus]\nbind_memory = "exclusive"\n'):
        io = pods.container(pods.pod("nvme", QosClass.GUARANTEED), "io",
                            guaranteed(2, "64Mi"), devices=[Device(host_path=disk1)])
        first = kernel.placement(guest.cri, io)
        assert kernel.node_of(first.cpus) == CPUSet([1])
        assert first.mems == CPUSet([1]), f"bound to {first.mems}, its CPUs are on node 1"
        # Node 1's other core to a second container near the same disk: a pin on io's CPUs
        # then leaves io nowhere on node 1, and it moves to node 0 with its memory.
        pods.container(pods.pod("fill", QosClass.GUARANTEED), "app", guaranteed(2, "64Mi"),
                       devices=[Device(host_path=disk1)])
        pods.pinned("pin", first.cpus.format())
        moved = kernel.placement(guest.cri, io)
        assert moved.cpus.isdisjoint(first.cpus)
        assert kernel.node_of(moved.cpus) == CPUSet([0])
        assert moved.mems == kernel.node_of(moved.cpus), (
            f"io moved to CPUs {moved.cpus} (node {kernel.node_of(moved.cpus)}) but its memory "
            f"is bound to {moved.mems}")
    wait_consistent(guest)


def test_exclusive_cpus_run_without_quota_and_a_resize_to_a_fraction_gets_it_back(
        guest: Guest, pods: Pods) -> None:
    """cgroup v2's ``cpu.max`` read from the guest's kernel: ``max`` (no quota) while the
    container holds exclusive CPUs, the kubelet's quota once a resize makes it shared."""
    db = pods.integer("db", 2)
    assert quota(guest, db) == "max"
    side = pods.container(pods.pod("side", QosClass.GUARANTEED), "app", fractional(500))
    assert quota(guest, side) == "50000"  # shared: the kubelet's quota stays
    guest.cri.update_resources(db, fractional(1500))
    assert quota(guest, db) == "150000"
    assert kernel.placement(guest.cri, db).cpus == CPUSet.parse(guest.state()["shared_pool"])
    guest.cri.update_resources(db, guaranteed(2, "64Mi"))
    assert quota(guest, db) == "max"
    assert len(kernel.placement(guest.cri, db).cpus) == 2
    wait_consistent(guest)


def quota(guest: Guest, container_id: str) -> str:
    """The first field of the container's ``cpu.max`` (cgroup v2): ``max`` for no quota."""
    path = guest.cri.container_status(container_id).cgroups_path
    assert path is not None
    return (cgroupfs.cgroup_dir(path) / "cpu.max").read_text().split()[0]


def fractional(millis: int) -> Resources:
    """A Guaranteed container's resources with a limit of ``millis`` m."""
    return container_resources(cpu_request=f"{millis}m", cpu_limit=f"{millis}m",
                               memory_limit="64Mi")
