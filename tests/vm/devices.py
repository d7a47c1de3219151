"""The shape's NVMe controllers as the guest's kernel shows them (for the device tests)."""

from __future__ import annotations

from tests.vm import kernel
from tests.vm.conftest import ShapeFacts


def nvme_disk(shape: ShapeFacts, node: int) -> tuple[str, str]:
    """The ``/dev`` node and PCI address of the shape's NVMe controller on ``node``, checked
    against the kernel (the disk found by its controller's address: enumeration order decides
    which controller becomes ``nvme0``)."""
    (drive,) = [d for d in shape["nvme"] if d["numa_node"] == node]
    address = drive["pci"]
    assert kernel.pci_numa_node(address) == node
    (disk,) = kernel.disks_of(address)
    assert kernel.block_device_pci(disk) == address
    return disk, address
