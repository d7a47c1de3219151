"""Exclusive CPUs on the NUMA node of the container's device (issue 31), on real PCI devices: a
Guaranteed container given the disk of the NVMe controller on one node gets its CPUs on that
node, where best fit alone would choose the other one; a container beside it without devices
is placed as without them. The controllers are the shape's (``shape.json``, by PCI address);
their ``/dev`` nodes and NUMA nodes are read from the guest's sysfs (``tests/vm/kernel.py``),
and every placement from the kernel. What the plugin says about each container (``explain``,
its ``inspect`` entry) is kept in ``devices.txt`` of the results, not judged.
"""

from __future__ import annotations

import json
import os
import stat

from click.testing import CliRunner

from cpuset_cli.commands.explain import explain
from cpuset_core.cpuset import CPUSet
from cpuset_lab.pod_spec import Device, QosClass
from cpuset_lab.resources import guaranteed
from tests.vm import kernel
from tests.vm.conftest import ShapeFacts
from tests.vm.devices import nvme_disk
from tests.vm.runtime import RESULTS, Guest, Pods, wait_consistent


def first_core(node: int) -> CPUSet:
    (core, *_) = [core for core in kernel.cores() if core <= kernel.nodes()[node]]
    return core


def assert_has_device(guest: Guest, container_id: str, disk: str) -> None:
    """The container's own ``/dev`` has the host's block device node (the runtime created the
    container with it)."""
    pid = guest.cri.container_status(container_id).pid
    inside, host = os.stat(f"/proc/{pid}/root{disk}"), os.stat(disk)
    assert stat.S_ISBLK(inside.st_mode), f"{disk} in the container is not a block device"
    assert inside.st_rdev == host.st_rdev, f"{disk} in the container is another device"


def record(guest: Guest, pods: Pods, title: str) -> None:
    """Append to ``devices.txt`` where each of the test's containers runs, the plugin's
    ``explain`` of it and its ``inspect`` entry (device hints show there once the plugin has
    them; their wording is not settled, so nothing asserts on it)."""
    lines = [f"== {title}"]
    entries = {entry["id"]: entry for entry in guest.state()["containers"]}
    for cid, name in pods.names.items():
        where = kernel.placement(guest.cri, cid)
        lines.append(f"-- {name} ({cid[:12]}): the kernel enforces CPUs {where.cpus} "
                     f"(NUMA node(s) {kernel.node_of(where.cpus)}), memory nodes {where.mems}")
        said = CliRunner().invoke(explain, ["--status-socket", str(guest.plugin.status), cid])
        lines.append(said.output.rstrip())
        lines.append("inspect: " + json.dumps(entries.get(cid), sort_keys=True))
    with (RESULTS / "devices.txt").open("a") as out:
        out.write("\n".join(lines) + "\n\n")


def test_a_container_given_a_device_on_node_1_gets_cpus_on_node_1_and_its_sibling_does_not(
        guest: Guest, pods: Pods, shape: ShapeFacts) -> None:
    disk, address = nvme_disk(shape, 1)
    # A pin on node 0's first core leaves node 0 the fuller node: best fit alone puts a
    # 2-CPU container on node 0's other core, so only the device can bring it to node 1.
    pods.pinned("pin", first_core(0).format())
    pod = pods.pod("nvme", QosClass.GUARANTEED)
    io = pods.container(pod, "io", guaranteed(2, "64Mi"), devices=[Device(host_path=disk)])
    # Created after io, in the same pod, without devices: with io on node 1 each node has one
    # free core, and without a hint of its own it takes the first, node 0's.
    plain = pods.container(pod, "plain", guaranteed(2, "64Mi"))
    record(guest, pods, f"device {disk} ({address}) on NUMA node 1")
    assert_has_device(guest, io, disk)
    io_cpus = kernel.placement(guest.cri, io).cpus
    assert kernel.node_of(io_cpus) == CPUSet([1]), (
        f"nvme/io runs on CPUs {io_cpus} (NUMA node(s) {kernel.node_of(io_cpus)}), but its "
        f"device {disk} ({address}) is on node 1")
    plain_cpus = kernel.placement(guest.cri, plain).cpus
    assert kernel.node_of(plain_cpus) == CPUSet([0]), (
        f"nvme/plain, without devices, runs on CPUs {plain_cpus}: its pod's device drew it "
        f"to node 1")
    assert len(io_cpus) == len(plain_cpus) == 2
    wait_consistent(guest)


def test_a_container_given_a_device_on_node_0_gets_cpus_on_node_0(
        guest: Guest, pods: Pods, shape: ShapeFacts) -> None:
    disk, address = nvme_disk(shape, 0)
    # The mirror image: a pin on node 1's first core makes node 1 the fuller node, where best
    # fit alone would go. (No sibling here: it would take node 0's other core, the device's
    # node, with or without device hints.)
    pods.pinned("pin", first_core(1).format())
    io = pods.container(pods.pod("nvme", QosClass.GUARANTEED), "io", guaranteed(2, "64Mi"),
                        devices=[Device(host_path=disk)])
    record(guest, pods, f"device {disk} ({address}) on NUMA node 0")
    assert_has_device(guest, io, disk)
    io_cpus = kernel.placement(guest.cri, io).cpus
    assert kernel.node_of(io_cpus) == CPUSet([0]), (
        f"nvme/io runs on CPUs {io_cpus} (NUMA node(s) {kernel.node_of(io_cpus)}), but its "
        f"device {disk} ({address}) is on node 0")
    assert len(io_cpus) == 2
    wait_consistent(guest)
