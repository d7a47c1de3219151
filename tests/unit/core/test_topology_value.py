"""Tests for ``Topology`` as a value: equality, immutability, defaults, and inconsistent
machines rejected.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cpuset_core.cpuset import EMPTY
from cpuset_core.errors import CpusetError, TopologyError
from cpuset_core.topology import CpuInfo, Topology
from tests.unit.core.hand_built_topologies import SMT, cpus, smt_machine

# -- value behaviour and validation --------------------------------------------------------------


def test_topologies_built_from_the_same_data_are_equal() -> None:
    assert smt_machine() == smt_machine()
    assert smt_machine() != smt_machine(l3=lambda _cpu: 0)


def test_topology_is_immutable() -> None:
    with pytest.raises(AttributeError):
        SMT.online = EMPTY  # type: ignore[misc]


def test_isolated_defaults_to_empty() -> None:
    assert SMT.isolated == EMPTY


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: Topology(cpus=(CpuInfo(cpu=0, core=0, socket=0, numa=0),
                                   CpuInfo(cpu=0, core=1, socket=0, numa=0)),
                             online=cpus("0")),
            "CPU 0 is described twice",
            id="duplicate CPU",
        ),
        pytest.param(
            lambda: Topology(cpus=(), online=cpus("0")),
            "describes no CPU",
            id="no CPUs",
        ),
        pytest.param(
            lambda: Topology(cpus=(), online=EMPTY),
            "describes no CPU",
            id="no CPUs and nothing online",
        ),
        pytest.param(
            lambda: Topology(cpus=(CpuInfo(cpu=0, core=0, socket=0, numa=0),),
                             online=cpus("0-1")),
            "online CPU(s) 1 have no topology information",
            id="online CPU without info",
        ),
        pytest.param(
            lambda: Topology(cpus=(CpuInfo(cpu=0, core=0, socket=0, numa=0),),
                             online=EMPTY),
            "no CPU is online",
            id="nothing online",
        ),
    ],
)
def test_inconsistent_topology_is_rejected(build: Callable[[], Topology], message: str) -> None:
    with pytest.raises(TopologyError) as caught:
        build()
    assert message in str(caught.value)
    assert isinstance(caught.value, CpusetError)
    assert caught.value.reason == "topology"
