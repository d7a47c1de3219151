"""A container's hugepage limits, as the runtime reports them over NRI, decide whether
``bind_memory = "hugepages"`` binds its memory: the kubelet sends a limit for every page size
the node has, 0 for those the pod did not ask for."""

from __future__ import annotations

import pytest

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.translate import container_facts
from cpuset_core import CpusetEngine
from cpuset_core.policy.options import AllocationOptions, MemoryBinding
from cpuset_core.settings import Settings
from cpuset_service.placement import PlacementService
from tests.builders.nri import container, pod
from tests.unit.nri.handler_harness import TOPOLOGY

TWO_MIB, ONE_GIB = "2MB", "1GB"  # the page sizes as the runtime names them


def with_hugepage_limits(c: pb.Container, **limits: int) -> pb.Container:
    for size, limit in limits.items():
        c.linux.resources.hugepage_limits.add(page_size=size, limit=limit)
    return c


@pytest.mark.parametrize(("limits", "hugepages"), [
    ({}, False),  # a runtime that sends none
    ({TWO_MIB: 0, ONE_GIB: 0}, False),  # the kubelet's zeros for sizes not asked for
    ({TWO_MIB: 0, ONE_GIB: 1 << 30}, True),
    ({TWO_MIB: 64 << 20}, True),
])
def test_only_a_positive_hugepage_limit_counts(limits: dict[str, int], hugepages: bool) -> None:
    db = pod("db")
    c = with_hugepage_limits(container("pg", db, cpus=2), **limits)
    assert container_facts(c).hugepages is hugepages


@pytest.mark.parametrize(("limit", "mems"), [(0, ""), (1 << 30, "1")])
def test_bind_memory_hugepages_binds_only_containers_with_hugepages(limit: int,
                                                                    mems: str) -> None:
    settings = Settings(allocation=AllocationOptions(bind_memory=MemoryBinding.HUGEPAGES))
    handler = CpusetNriHandler(PlacementService(CpusetEngine(TOPOLOGY, settings)))
    db = pod("db")
    # Node 0's CPUs are taken first, so the container lands on node 1 (CPUs 4-7, 12-15).
    handler.on_create_container(db, container("first", db, cpus=8))
    pg = with_hugepage_limits(container("pg", db, cpus=2), **{TWO_MIB: 0, ONE_GIB: limit})
    adjustment, _ = handler.on_create_container(db, pg)
    assert adjustment is not None
    assert adjustment.linux.resources.cpu.mems == mems
