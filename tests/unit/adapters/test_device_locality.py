"""The sysfs device locator: device nodes, VFIO groups, RDMA verbs and SR-IOV environment
addresses resolved to PCI functions and NUMA nodes, in a sysfs tree laid out as the kernel
lays it out (relative links from /sys/dev and /sys/bus into /sys/devices), and on this host's
own /sys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cpuset_adapters.device_locality import DeviceNode, SysfsDeviceLocator
from cpuset_core import CPUSet, DeviceLocality
from tests.support.fake_sysfs import host_block_devices, link, pci_function

ROOT_PORT = "devices/pci0000:40/0000:40:00.0"
NVME_FN = "0000:41:00.0"
NIC_VF = "0000:3b:02.1"


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    """An NVMe controller on node 1 (namespace 259:1, controller char 242:0), a virtio disk
    whose function reports -1 (254:0), a loop device (7:0), /dev/null (1:3), a VFIO group
    of two functions on node 0, an RDMA device on node 1, an SR-IOV VF on node 0."""
    nvme = pci_function(tmp_path, ROOT_PORT, NVME_FN, "1")
    (tmp_path / nvme / "nvme/nvme0/nvme0n1").mkdir(parents=True)
    link(tmp_path, "dev/block/259:1", f"{nvme}/nvme/nvme0/nvme0n1")
    link(tmp_path, "dev/char/242:0", f"{nvme}/nvme/nvme0")
    virtio = pci_function(tmp_path, "devices/pci0000:00", "0000:00:02.0", "-1")
    (tmp_path / virtio / "virtio1/block/vda").mkdir(parents=True)
    link(tmp_path, "dev/block/254:0", f"{virtio}/virtio1/block/vda")
    (tmp_path / "devices/virtual/block/loop0").mkdir(parents=True)
    link(tmp_path, "dev/block/7:0", "devices/virtual/block/loop0")
    (tmp_path / "devices/virtual/mem/null").mkdir(parents=True)
    link(tmp_path, "dev/char/1:3", "devices/virtual/mem/null")
    for address in ("0000:05:00.0", "0000:05:00.1"):
        where = pci_function(tmp_path, "devices/pci0000:00/0000:00:1d.0", address, "0")
        link(tmp_path, f"kernel/iommu_groups/17/devices/{address}", where)
    rdma = pci_function(tmp_path, ROOT_PORT, "0000:42:00.0", "1")
    (tmp_path / rdma / "infiniband_verbs/uverbs0").mkdir(parents=True)
    link(tmp_path, "class/infiniband_verbs/uverbs0", f"{rdma}/infiniband_verbs/uverbs0")
    link(tmp_path, f"{rdma}/infiniband_verbs/uverbs0/device", rdma)
    pci_function(tmp_path, "devices/pci0000:3a/0000:3a:00.0", NIC_VF, "0")
    return tmp_path


def locate(sysfs: Path, *nodes: DeviceNode, env: tuple[str, ...] = ()) -> tuple[DeviceLocality,
                                                                                   ...]:
    return SysfsDeviceLocator(sysfs).locate(nodes, env)


def test_an_nvme_namespace_is_on_its_controllers_functions_node(sysfs: Path) -> None:
    assert locate(sysfs, DeviceNode("/dev/nvme0n1", "b", 259, 1)) == (
        DeviceLocality(device="/dev/nvme0n1 (259:1)", pci=(NVME_FN,), numa_nodes=CPUSet((1,))),)


def test_the_nvme_controllers_char_device_is_found_the_same_way(sysfs: Path) -> None:
    (found,) = locate(sysfs, DeviceNode("/dev/nvme0", "c", 242, 0))
    assert found.numa_nodes == CPUSet((1,))


def test_a_function_reporting_minus_one_gives_no_hint_and_says_so(sysfs: Path) -> None:
    (found,) = locate(sysfs, DeviceNode("/dev/vda", "b", 254, 0))
    assert found.pci == ("0000:00:02.0",)
    assert found.numa_nodes == CPUSet()
    assert found.why == "numa_node is -1"


def test_virtual_and_unknown_devices_are_left_out(sysfs: Path) -> None:
    assert locate(sysfs, DeviceNode("/dev/loop0", "b", 7, 0), DeviceNode("/dev/null", "c", 1, 3),
                  DeviceNode("/dev/nothing", "c", 99, 99)) == ()


def test_a_vfio_group_is_on_the_nodes_of_its_functions(sysfs: Path) -> None:
    (found,) = locate(sysfs, DeviceNode("/dev/vfio/17", "c", 511, 0),
                      DeviceNode("/dev/vfio/vfio", "c", 10, 196))
    assert found == DeviceLocality(device="/dev/vfio/17 (511:0)",
                                   pci=("0000:05:00.0", "0000:05:00.1"), numa_nodes=CPUSet((0,)))


def test_an_rdma_verbs_device_without_a_dev_link_is_found_through_its_class(sysfs: Path) -> None:
    (found,) = locate(sysfs, DeviceNode("/dev/infiniband/uverbs0", "c", 231, 192))
    assert found.pci == ("0000:42:00.0",)
    assert found.numa_nodes == CPUSet((1,))


def test_sriov_addresses_in_the_environment_are_located_and_other_variables_ignored(
        sysfs: Path) -> None:
    # The plugin's _INFO variable is JSON about the same addresses, not a device of its own.
    info = json.dumps({NIC_VF: {"generic": {"deviceID": NIC_VF}}})
    found = locate(sysfs, env=(f"PCIDEVICE_INTEL_COM_SRIOV_NETDEVICE={NIC_VF}", "PATH=/bin",
                               f"PCIDEVICE_INTEL_COM_SRIOV_NETDEVICE_INFO={info}",
                               f"PCIDEVICE_NVME={NVME_FN.upper()},{NIC_VF}"))
    assert [(d.device, d.pci, d.numa_nodes) for d in found] == [
        (f"PCIDEVICE_INTEL_COM_SRIOV_NETDEVICE={NIC_VF}", (NIC_VF,), CPUSet((0,))),
        (f"PCIDEVICE_NVME={NVME_FN.upper()},{NIC_VF}", (NVME_FN, NIC_VF), CPUSet((0, 1))),
    ]


@pytest.mark.parametrize(("value", "why"), [
    ("eth0", "not a PCI address: 'eth0'"),
    ("", "no PCI address"),
    ("0000:99:00.0", "numa_node unreadable (No such file or directory)"),
])
def test_a_bad_or_unknown_environment_address_gives_no_hint_and_says_why(
        sysfs: Path, value: str, why: str) -> None:
    (found,) = locate(sysfs, env=(f"PCIDEVICE_X={value}",))
    assert found.numa_nodes == CPUSet()
    assert found.why == why


def test_an_unreadable_numa_node_file_gives_no_hint(sysfs: Path) -> None:
    (sysfs / ROOT_PORT / NVME_FN / "numa_node").write_text("garbage\n")
    (found,) = locate(sysfs, DeviceNode("/dev/nvme0n1", "b", 259, 1))
    assert found.why == "numa_node is 'garbage'"


def test_the_same_device_given_twice_counts_once(sysfs: Path) -> None:
    node = DeviceNode("/dev/nvme0n1", "b", 259, 1)
    assert len(locate(sysfs, node, node)) == 1


def test_this_hosts_pci_block_devices_resolve_to_their_functions() -> None:
    """On the real /sys: every block device behind a PCI function resolves to that function
    with the node its numa_node file reports (or none for -1); virtual ones to nothing
    (multipath NVMe disks are the test above's)."""
    checked = 0
    for disk in host_block_devices():
        found = SysfsDeviceLocator(Path("/sys")).locate(
            [DeviceNode(f"/dev/{disk.name}", "b", disk.major, disk.minor)], ())
        if disk.function is None:
            assert disk.multipath or found == ()
            continue
        node = disk.numa_node
        assert found == (DeviceLocality(
            device=f"/dev/{disk.name} ({disk.major}:{disk.minor})", pci=(disk.function,),
            numa_nodes=CPUSet((node,)) if node >= 0 else CPUSet(),
            why="" if node >= 0 else f"numa_node is {node}"),)
        checked += 1
    if not checked:
        pytest.skip("this host has no block device behind a PCI function")


def test_a_multipath_nvme_disk_is_on_its_subsystems_controllers_nodes(tmp_path: Path) -> None:
    """Native NVMe multipath: the disk is under /sys/devices/virtual/nvme-subsystem, and the
    subsystem links to its controllers, each under its PCI function."""
    subsystem = "devices/virtual/nvme-subsystem/nvme-subsys0"
    (tmp_path / subsystem / "nvme0n1").mkdir(parents=True)
    link(tmp_path, "dev/block/259:0", f"{subsystem}/nvme0n1")
    for name, address, node in (("nvme0", "0000:41:00.0", "1"), ("nvme1", "0000:42:00.0", "1")):
        function = pci_function(tmp_path, ROOT_PORT, address, node)
        (tmp_path / function / "nvme" / name).mkdir(parents=True)
        link(tmp_path, f"{subsystem}/{name}", f"{function}/nvme/{name}")
    (found,) = SysfsDeviceLocator(tmp_path).locate([DeviceNode("/dev/nvme0n1", "b", 259, 0)], ())
    assert found == DeviceLocality(device="/dev/nvme0n1 (259:0)",
                                   pci=("0000:41:00.0", "0000:42:00.0"), numa_nodes=CPUSet((1,)))
