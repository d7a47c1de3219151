"""Where a container's devices are, and whether it wants its CPUs near them.

An adapter reads the kernel (sysfs) and hands the core one :class:`DeviceLocality` per device a
container was given: a device node (``linux.devices``) or a PCI address a device plugin put into
its environment. The core only combines them: the *device hint* of a container is the smallest
set of NUMA nodes covering every device whose node the platform reports (the union; a device
with no node gives no hint and restricts nothing). Integer containers take their exclusive CPUs
within the hint when it holds them (``ExclusiveAllocator.choose(near=…)``); a pin keeps exactly
what it asked, and is reported when it lies away from its devices.

A pod opts containers out of device hints with the annotations of :data:`HINTS_POD` (every
container) and :data:`HINTS_CONTAINER_PREFIX` + name (one container, over the pod's), values
``"true"`` or ``"false"`` — the shape seed 004's policy uses, under this project's own domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.workload import DEVICE_HINTS, VALUES

HINTS_POD: Final = DEVICE_HINTS.pod_key
"""Pod annotation: ``"false"`` makes every container of the pod ignore its devices' locality."""
HINTS_CONTAINER_PREFIX: Final = DEVICE_HINTS.container_prefix
"""Followed by a container's name: ``"false"``/``"true"`` for that container, over the pod's."""
HINTS_VALUES: Final = VALUES


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceLocality:
    """One device of a container and the NUMA node(s) the kernel puts it on."""

    device: str
    """How the container was given it: ``/dev/nvme1n1`` or ``PCIDEVICE_X=0000:41:00.0``."""
    pci: tuple[str, ...] = ()
    """The PCI function(s) it resolves to (a VFIO group may hold several); empty when none."""
    numa_nodes: CPUSet = EMPTY
    """The NUMA nodes of those functions; empty means no hint (see ``why``)."""
    why: str = ""
    """Why there is no hint: ``numa_node is -1``, ``not behind a PCI function``, …"""

    def describe(self) -> str:
        """``/dev/nvme1n1 (PCI 0000:41:00.0): NUMA node 1`` or the reason there is no hint."""
        where = f" (PCI {', '.join(self.pci)})" if self.pci else ""
        if self.numa_nodes:
            return f"{self.device}{where}: NUMA node {self.numa_nodes}"
        return f"{self.device}{where}: no hint, {self.why or 'no NUMA node reported'}"


def hinted_nodes(devices: Iterable[DeviceLocality]) -> CPUSet:
    """The NUMA nodes covering every device that has one (empty: no hint)."""
    nodes = EMPTY
    for device in devices:
        nodes |= device.numa_nodes
    return nodes


def hints_wanted(annotations: Mapping[str, str], container: str, subject: str) -> bool:
    """Whether container ``container`` of a pod with ``annotations`` takes device hints: the
    container's annotation, else the pod's, else yes. Raises :class:`AnnotationValueError` for
    a value other than ``"true"``/``"false"``."""
    answer = DEVICE_HINTS.resolve(annotations, container, subject)
    return answer is None or answer[0]


def hint_note(devices: Iterable[DeviceLocality], nodes: CPUSet) -> str:
    """What a classification reason says of the devices: where they are."""
    listed = "; ".join(d.describe() for d in devices)
    if not nodes:
        return f"devices give no NUMA hint ({listed})"
    return f"devices on NUMA node {nodes} ({listed})"
