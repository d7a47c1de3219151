"""A sysfs tree laid out as the kernel lays it out for devices: ``/sys/devices/…`` directories,
relative links from ``/sys/dev/{block,char}`` and ``/sys/bus/pci/devices`` into them; and this
host's own block devices, read from its sysfs without the product's code."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def link(tree: Path, name: str, target: str) -> None:
    """A relative symlink ``name`` → ``target`` (both under ``tree``), as sysfs has them."""
    path = tree / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(os.path.relpath(tree / target, path.parent))


def pci_function(tree: Path, parent: str, address: str, numa_node: str) -> str:
    """A PCI function under ``parent`` with its ``numa_node``, listed in /sys/bus/pci/devices;
    returns its directory (relative to ``tree``)."""
    where = f"{parent}/{address}"
    (tree / where).mkdir(parents=True)
    (tree / where / "numa_node").write_text(numa_node + "\n")
    link(tree, f"bus/pci/devices/{address}", where)
    return where


def device_behind(tree: Path, number: str, function: str, name: str) -> None:
    """Device ``number`` (``block/MAJ:MIN`` or ``char/MAJ:MIN``) as a child ``name`` of
    ``function``."""
    (tree / function / name).mkdir(parents=True)
    link(tree, f"dev/{number}", f"{function}/{name}")


@dataclass(frozen=True, slots=True)
class HostBlockDevice:
    """A block device of this host as its sysfs shows it, read without the product's code."""

    name: str
    major: int
    minor: int
    function: str | None
    """The nearest PCI function above it; ``None`` for a virtual device (or a multipath NVMe
    disk, whose functions are its subsystem's controllers')."""
    multipath: bool

    @property
    def numa_node(self) -> int:
        assert self.function is not None
        return int(Path(f"/sys/bus/pci/devices/{self.function}/numa_node").read_text())


def host_block_devices() -> list[HostBlockDevice]:
    """Every entry of this host's ``/sys/dev/block``."""
    root = Path("/sys/dev/block")
    found = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        target = Path(os.path.realpath(entry))
        functions = [p.name for p in (target, *target.parents)
                     if len(p.name) == 12 and p.name[4] == ":" and p.name[10] == "."]
        major, minor = (int(n) for n in entry.name.split(":"))
        found.append(HostBlockDevice(target.name, major, minor,
                                     functions[0] if functions else None,
                                     "nvme-subsystem" in target.parts))
    return found
