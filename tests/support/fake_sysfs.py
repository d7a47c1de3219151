"""A sysfs tree laid out as the kernel lays it out for devices: ``/sys/devices/…`` directories,
relative links from ``/sys/dev/{block,char}`` and ``/sys/bus/pci/devices`` into them."""

from __future__ import annotations

import os
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
