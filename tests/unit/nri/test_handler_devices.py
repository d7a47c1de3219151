"""The NRI handler with a device locator: a container's ``linux.devices`` and environment reach
the locator, and what it finds steers the placement (creation, resize and Synchronize)."""

from __future__ import annotations

from collections.abc import Iterable

from cpuset_adapters.device_locality import DeviceNode
from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import CPUSet, CpusetEngine, DeviceLocality
from cpuset_service.placement import PlacementService
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import TOPOLOGY, resources


class RecordingLocator:
    """Puts every /dev/nvme1* on NUMA node 1 and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[list[DeviceNode], list[str]]] = []

    def __call__(self, nodes: Iterable[DeviceNode], env: Iterable[str],
                 ) -> tuple[DeviceLocality, ...]:
        nodes, env = list(nodes), list(env)
        self.asked.append((nodes, env))
        return tuple(DeviceLocality(device=n.path, pci=("0000:41:00.0",), numa_nodes=CPUSet((1,)))
                     for n in nodes if n.path.startswith("/dev/nvme1"))


def with_nvme(c: pb.Container) -> pb.Container:
    c.linux.devices.add(path="/dev/nvme1n1", type="b", major=259, minor=1)
    c.env.append("PCIDEVICE_X=0000:41:00.0")
    return c


def make() -> tuple[CpusetNriHandler, RecordingLocator]:
    locator = RecordingLocator()
    handler = CpusetNriHandler(PlacementService(CpusetEngine(TOPOLOGY)), locate_devices=locator)
    return handler, locator


def test_a_container_with_a_device_on_node_1_gets_cpus_on_node_1() -> None:
    handler, locator = make()
    db = pod("db")
    adjustment, _ = handler.on_create_container(db, with_nvme(container("pg", db, cpus=2)))
    assert adjustment is not None
    assert TOPOLOGY.numa_nodes_of(CPUSet.parse(adjustment.linux.resources.cpu.cpus)) == \
        CPUSet((1,))
    nodes, env = locator.asked[-1]
    assert nodes == [DeviceNode("/dev/nvme1n1", "b", 259, 1)]
    assert "PCIDEVICE_X=0000:41:00.0" in env


def test_without_a_locator_devices_are_not_looked_at_and_placement_is_todays() -> None:
    handler = CpusetNriHandler(PlacementService(CpusetEngine(TOPOLOGY)))
    db = pod("db")
    adjustment, _ = handler.on_create_container(db, with_nvme(container("pg", db, cpus=2)))
    assert adjustment is not None
    assert adjustment.linux.resources.cpu.cpus == "0,8"


def test_a_resize_grows_a_container_near_its_devices() -> None:
    handler, _ = make()
    db = pod("db")
    pg = with_nvme(container("pg", db, cpus=2))
    handler.on_create_container(db, pg)
    updates = handler.on_update_container(db, pg, resources(4))
    own = updates[-1].linux.resources.cpu.cpus
    assert TOPOLOGY.numa_nodes_of(CPUSet.parse(own)) == CPUSet((1,))


def test_a_synchronize_places_a_container_without_a_cpuset_near_its_devices() -> None:
    handler, _ = make()
    db = pod("db")
    pg = with_nvme(container("pg", db, cpus=2))
    updates = handler.on_synchronize([db], [pg])
    assert {u.container_id: TOPOLOGY.numa_nodes_of(CPUSet.parse(u.linux.resources.cpu.cpus))
            for u in updates} == {pg.id: CPUSet((1,))}
