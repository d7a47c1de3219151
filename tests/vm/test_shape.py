"""The guest is the machine its shape claims to be (every other test's expectations rest on it),
its PCI devices are on the NUMA nodes the shape puts them, and ``nri-cpuset topology`` reads it
as the kernel describes it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cpuset_adapters import cgroupfs
from cpuset_cli.commands.topology import topology
from cpuset_core.cpuset import CPUSet
from tests.vm import kernel
from tests.vm.conftest import ShapeFacts
from tests.vm.runtime import wait_until


def test_the_kernel_has_the_shapes_sockets_cores_and_threads(shape: ShapeFacts) -> None:
    assert kernel.online() == CPUSet.parse(shape["cpus"])
    assert [core.format() for core in kernel.cores()] == shape["cores"]
    assert len({kernel.package(cpu) for cpu in kernel.online()}) == shape["sockets"]
    assert {len(core) for core in kernel.cores()} == {shape["threads_per_core"]}


def test_the_kernel_has_the_shapes_numa_nodes_memory_and_distances(shape: ShapeFacts) -> None:
    nodes = kernel.nodes()
    assert [nodes[n].format() for n in sorted(nodes)] == shape["nodes"]
    assert sorted(set(nodes) - set(kernel.memory_nodes())) == shape["memoryless"]
    assert [kernel.distances(n) for n in sorted(nodes)] == shape["distances"]


def test_the_kernel_isolates_exactly_the_shapes_cpus(shape: ShapeFacts) -> None:
    assert kernel.isolated() == CPUSet.parse(shape["isolated"], allow_empty=True)


def test_each_nvme_controller_is_on_the_shapes_numa_node_and_gives_one_disk(
        shape: ShapeFacts) -> None:
    expected = {drive["pci"]: drive["numa_node"] for drive in shape["nvme"]}
    # Exactly the shape's controllers, bound: the driver is loaded and found each of them.
    assert kernel.pci_functions_bound_to("nvme") == sorted(expected)
    assert {address: kernel.pci_numa_node(address) for address in expected} == expected
    for drive in shape["nvme"]:
        # The serial says which of QEMU's controllers sits at this address.
        assert kernel.nvme_serials(drive["pci"]) == [drive["serial"]]
        # The namespace is scanned after the driver binds, asynchronously.
        wait_until(lambda address=drive["pci"]: bool(kernel.disks_of(address)),
                   f"the disk of {drive['pci']}", 10)
        (disk,) = kernel.disks_of(drive["pci"])
        assert kernel.block_device_pci(disk) == drive["pci"]


def test_cgroups_are_the_shapes_version_with_a_cpuset_controller(shape: ShapeFacts) -> None:
    assert cgroupfs.cgroup_version() == shape["cgroup"]
    root = Path("/sys/fs/cgroup")
    if shape["cgroup"] == 2:
        assert "cpuset" in (root / "cgroup.controllers").read_text().split()
        cpus, mems = root / "cpuset.cpus.effective", root / "cpuset.mems.effective"
    else:
        cpus, mems = root / "cpuset/cpuset.effective_cpus", root / "cpuset/cpuset.effective_mems"
    assert kernel.read_list(cpus) == kernel.online()
    assert kernel.read_list(mems) == kernel.memory_nodes()


def test_nri_cpuset_topology_reads_the_guest_as_the_kernel_describes_it(
        shape: ShapeFacts) -> None:
    result = CliRunner().invoke(topology, ["--sysfs-root", "/sys", "-o", "json"])
    assert result.exit_code == 0, result.output
    seen = json.loads(result.stdout)
    assert seen["cpus"]["online"] == shape["cpus"]
    assert seen["cpus"]["isolated"] == shape["isolated"]
    assert [c["threads"] for c in seen["cores"]] == [list(core) for core in kernel.cores()]
    assert len(seen["sockets"]) == shape["sockets"]
    with_cpus = [n for n in seen["numa_nodes"] if n["cpus"]]
    assert [n["cpus"] for n in with_cpus] == shape["nodes"]
    assert [n["id"] for n in with_cpus if not n["has_memory"]] == shape["memoryless"]
    for node in with_cpus:
        assert [node["distances"][str(other)] for other in range(len(with_cpus))] == \
            shape["distances"][node["id"]]
