"""What the NRI handler tests share: the topology, a handler on a fresh service with its
pusher, the CPUs a list of updates carries, and the NRI resources of a CPU limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import CpusetEngine
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.pusher import UpdatePusher

TOPOLOGY = build_topology(DUAL_SOCKET_HT)  # 16 CPUs, n and n+8 siblings, nodes 0-3,8-11 / rest


def make() -> tuple[CpusetNriHandler, PlacementService, UpdatePusher]:
    """The handler on a fresh service; the service, and its background pusher."""
    service = PlacementService(CpusetEngine(TOPOLOGY))
    return CpusetNriHandler(service), service, service.pusher


def cpus_of(updates: Sequence[pb.ContainerUpdate]) -> dict[str, str]:
    return {u.container_id: u.linux.resources.cpu.cpus for u in updates}


def resources(cpus: float) -> pb.LinuxResources:
    r = pb.LinuxResources()
    r.cpu.quota.value = int(cpus * 100_000)
    r.cpu.period.value = 100_000
    r.cpu.shares.value = int(cpus * 1024)
    return r
