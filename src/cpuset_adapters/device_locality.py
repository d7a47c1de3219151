"""Where a container's devices are: their PCI functions and NUMA nodes, read from sysfs.

A container is given devices two ways, and both are read:

* **device nodes** (NRI ``linux.devices``: what device plugins allocated and the pod asked for).
  ``/sys/dev/{char,block}/MAJ:MIN`` links into ``/sys/devices``; walking up from there, the
  first directory named like a PCI address is the function the device hangs off (an NVMe
  namespace's controller's function, a partition's disk's). VFIO group nodes
  (``/dev/vfio/N``) have no such link to a function: their functions are listed in
  ``/sys/kernel/iommu_groups/N/devices``. RDMA ``uverbs`` nodes are found through their link
  like any other, else through ``/sys/class/infiniband_verbs/uverbsN/device``. With native
  NVMe multipath a namespace's disk is under ``nvme-subsystem``; its controllers' functions
  count.
* **PCI addresses in the environment**: the SR-IOV network device plugin hands out virtual
  functions as ``PCIDEVICE_<RESOURCE>=<address>[,<address>…]`` (and, in recent releases, a
  ``PCIDEVICE_<RESOURCE>_INFO`` JSON map about the same addresses: skipped, it names no device
  the first does not). It is the one plugin
  convention supported: GPU plugins name devices by UUID (``NVIDIA_VISIBLE_DEVICES``), which
  sysfs cannot map to a function, and give their device nodes anyway.

A function's ``numa_node`` is the hint; ``-1`` (the platform does not say) or an unreadable
file gives none, said in ``DeviceLocality.why``. Devices behind no PCI function (``/dev/null``,
terminals, loop devices, FUSE) say nothing about locality and are left out: every container has
some, and listing them would only bury the ones that matter.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cpuset_core import CPUSet, DeviceLocality

PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
"""A PCI function's name in sysfs: domain:bus:device.function, lower-case hex."""
ENV_PREFIX = "PCIDEVICE_"
ENV_INFO_SUFFIX = "_INFO"
VFIO_DIR = "/dev/vfio/"
UVERBS = re.compile(r"^/dev/infiniband/(uverbs\d+)$")
CONTROLLER = re.compile(r"^nvme\d+$")


@dataclass(frozen=True, slots=True)
class DeviceNode:
    """A device node a container is created with (an OCI ``linux.devices`` entry)."""

    path: str
    type: str
    """``c`` (char), ``b`` (block), ``u`` (unbuffered char) or ``p`` (FIFO)."""
    major: int
    minor: int


LocateDevices = Callable[[Iterable[DeviceNode], Iterable[str]], tuple[DeviceLocality, ...]]
"""Device nodes and ``K=V`` environment in, where those devices are out
(:meth:`SysfsDeviceLocator.locate`)."""


class SysfsDeviceLocator:
    """Reads devices' PCI functions and NUMA nodes under a sysfs root (``/sys`` on a node)."""

    def __init__(self, sysfs_root: Path = Path("/sys")) -> None:
        self._root = sysfs_root

    def locate(self, nodes: Iterable[DeviceNode], env: Iterable[str]) -> tuple[DeviceLocality, ...]:
        """Every device of ``nodes`` behind a PCI function and every PCI address of ``env``
        (``K=V`` entries), with their NUMA nodes; the same device given twice counts once."""
        found: list[DeviceLocality] = []
        seen: set[str] = set()
        for node in nodes:
            functions = self._functions_of(node)
            # Named as the container sees it (NRI gives the path inside the container), with
            # its number, which is the host's.
            name = f"{node.path} ({node.major}:{node.minor})"
            if functions and name not in seen:
                seen.add(name)
                found.append(self._locality(name, functions))
        for entry in env:
            name, _, value = entry.partition("=")
            if (name.startswith(ENV_PREFIX) and not name.endswith(ENV_INFO_SUFFIX)
                    and entry not in seen):
                seen.add(entry)
                found.append(self._from_environment(entry, value))
        return tuple(found)

    def _functions_of(self, node: DeviceNode) -> tuple[str, ...]:
        if node.type in {"c", "u"} and node.path.startswith(VFIO_DIR):
            group = node.path.removeprefix(VFIO_DIR)
            if group.isdigit():  # /dev/vfio/vfio, the container, belongs to no group
                return self._iommu_group(group)
        kind = "block" if node.type == "b" else "char"
        link = self._root / "dev" / kind / f"{node.major}:{node.minor}"
        function = self._pci_function_above(link)
        if function is None and (controllers := self._multipath_controllers(link)):
            return controllers
        if function is None and (verbs := UVERBS.match(node.path)):
            function = self._pci_function_above(
                self._root / "class" / "infiniband_verbs" / verbs.group(1) / "device")
        return () if function is None else (function,)

    def _multipath_controllers(self, link: Path) -> tuple[str, ...]:
        """With native NVMe multipath (Debian's kernels), a namespace's disk hangs off
        ``/sys/devices/virtual/nvme-subsystem/nvme-subsysN``, not a PCI function: its functions
        are those of the subsystem's controllers (``nvmeM`` links beside the disk)."""
        if not os.path.lexists(link):
            return ()
        target = Path(os.path.realpath(link))
        subsystem = next((p for p in target.parents if p.parent.name == "nvme-subsystem"), None)
        if subsystem is None:
            return ()
        found = (self._pci_function_above(subsystem / name)
                 for name in sorted(os.listdir(subsystem)) if CONTROLLER.match(name))
        return tuple(sorted({f for f in found if f is not None}))

    def _iommu_group(self, group: str) -> tuple[str, ...]:
        try:
            names = os.listdir(self._root / "kernel" / "iommu_groups" / group / "devices")
        except OSError:
            return ()
        return tuple(sorted(n for n in names if PCI_ADDRESS.match(n)))

    def _pci_function_above(self, link: Path) -> str | None:
        """The nearest PCI function at or above what ``link`` resolves to; ``None`` when the
        link is missing or the device is virtual."""
        if not os.path.lexists(link):
            return None
        target = Path(os.path.realpath(link))
        for part in (target, *target.parents):
            if PCI_ADDRESS.match(part.name):
                return part.name
        return None

    def _from_environment(self, entry: str, value: str) -> DeviceLocality:
        addresses = tuple(a.strip().lower() for a in value.split(",") if a.strip())
        bad = [a for a in addresses if not PCI_ADDRESS.match(a)]
        if bad or not addresses:
            why = f"not a PCI address: {bad[0]!r}" if bad else "no PCI address"
            return DeviceLocality(device=entry, why=why)
        return self._locality(entry, addresses)

    def _locality(self, device: str, functions: Sequence[str]) -> DeviceLocality:
        nodes: set[int] = set()
        problems: list[str] = []
        for function in functions:
            node, problem = self._numa_node(function)
            if node is None:
                problems.append(problem)
            else:
                nodes.add(node)
        why = "" if nodes else "; ".join(dict.fromkeys(problems))
        return DeviceLocality(device=device, pci=tuple(functions), numa_nodes=CPUSet(nodes),
                              why=why)

    def _numa_node(self, function: str) -> tuple[int | None, str]:
        path = self._root / "bus" / "pci" / "devices" / function / "numa_node"
        try:
            text = path.read_text().strip()
        except OSError as exc:
            return None, f"numa_node unreadable ({exc.strerror or exc})"
        try:
            node = int(text)
        except ValueError:
            return None, f"numa_node is {text!r}"
        if node < 0:
            return None, f"numa_node is {node}"
        return node, ""
