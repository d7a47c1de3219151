"""The placement rules admission and rebuild share (``placing``): a container that breaks one
is refused at admission and reported at a synchronize, with the same error and the same words."""

from __future__ import annotations

import pytest

from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import (
    AdmissionError,
    CpuUnavailableError,
    FullCoresUnavailableError,
    InsufficientCpusError,
    NumaResolutionError,
)
from cpuset_core.model import ContainerFacts, PodFacts
from cpuset_core.policy.options import AllocationOptions
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, Settings
from cpuset_core.topology import Topology
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET, OFFLINE_ISO, cpus, one_cpu_per_node

WHOLE_CORES = Settings(allocation=AllocationOptions(full_physical_cores=True))
NO_MEMORY_ON_NODE_1 = one_cpu_per_node(2, memory=cpus("0"), distances={})


def pinned(pins: str) -> PodFacts:
    return pod("pin", annotations={DEFAULT_PIN_ANNOTATION: pins})


CASES = [
    pytest.param(OFFLINE_ISO, Settings(), pinned("6-7"), None, CpuUnavailableError,
                 id="a pin naming an offline CPU"),
    pytest.param(NO_MEMORY_ON_NODE_1, Settings(), pinned("1"), None, NumaResolutionError,
                 id="a pin whose memory node cannot be resolved"),
    pytest.param(DUAL_SOCKET, Settings(), pod("big"), 17, InsufficientCpusError,
                 id="more exclusive CPUs than are free"),
    pytest.param(DUAL_SOCKET, WHOLE_CORES, pod("odd"), 3, FullCoresUnavailableError,
                 id="a count whole cores cannot make"),
]


@pytest.mark.parametrize(("topology", "settings", "p", "limit", "error"), CASES)
def test_admission_refuses_with_the_error_a_synchronize_reports(
        topology: Topology, settings: Settings, p: PodFacts, limit: int | None,
        error: type[AdmissionError]) -> None:
    facts: ContainerFacts = container("c", p, cpu_limit=limit)
    with pytest.raises(error) as refused:
        CpusetEngine(topology, settings).plan_create(p, facts)
    reported = CpusetEngine(topology, settings).plan_synchronize([p], [facts]).problems
    assert [(type(e), str(e)) for e in reported] == [(error, str(refused.value))]
