"""Per-NUMA-node headroom (``policy.headroom``): what one integer container could be given on
each node now, counted as the planner decides it (reservation, isolation, pins, exclusive
CPUs, draining CPUs, the shared pool's floor, whole cores).

DUAL_SOCKET: node 0 = 0-3,8-11, node 1 = 4-7,12-15, CPU n and n+8 are siblings.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import AdmissionError
from cpuset_core.policy.headroom import NodeHeadroom, numa_headroom, pool_floor
from cpuset_core.policy.options import AllocationOptions
from cpuset_core.settings import Settings
from cpuset_lab.machines import MachineShape, build_topology
from tests.builders.facts import container, pod
from tests.unit.core.engine_steps import annotated_ctr, integer_ctr, release, shared_ctr
from tests.unit.core.topologies import DUAL_SOCKET, OFFLINE_ISO, cpus

ONE_NODE = build_topology(MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=6,
                                       threads_per_core=2))
"""12 CPUs on one NUMA node; CPU n and n+6 are siblings."""


def headroom(engine: CpusetEngine) -> dict[int, tuple[int, int, int]]:
    return {n.node: (n.capacity, n.allocatable, n.available)
            for n in numa_headroom(engine.topology, engine.ledger, engine.settings,
                                   engine.draining)}


def test_an_idle_machine_offers_every_cpu_of_every_node() -> None:
    assert headroom(CpusetEngine(DUAL_SOCKET)) == {0: (8, 8, 8), 1: (8, 8, 8)}


def test_reserved_cpus_are_capacity_but_never_allocatable() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(system_reserved=cpus("0-1")))
    assert headroom(engine) == {0: (8, 6, 6), 1: (8, 8, 8)}


def test_offline_cpus_are_no_capacity_and_isolated_ones_are_allocatable_only_when_allowed(
        ) -> None:
    # OFFLINE_ISO: 8 CPUs, CPU 7 offline, 2-3 isolated, one node.
    assert headroom(CpusetEngine(OFFLINE_ISO)) == {0: (7, 5, 5)}
    allowed = CpusetEngine(OFFLINE_ISO, Settings(exclusive_on_isolated=True))
    assert headroom(allowed) == {0: (7, 7, 7)}


def test_pins_and_integer_containers_take_their_nodes_cpus() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    annotated_ctr(engine, "io", "0-1")
    integer_ctr(engine, "db", 2)
    db = engine.ledger.entries["db"].cpus
    on_node_0 = len(db & DUAL_SOCKET.cpus_of_numa(0))
    assert headroom(engine)[0] == (8, 8, 6 - on_node_0)
    assert headroom(engine)[1] == (8, 8, 8 - (2 - on_node_0))


def test_a_release_gives_the_cpus_back() -> None:
    engine = CpusetEngine(DUAL_SOCKET)
    integer_ctr(engine, "db", 4)
    release(engine, "db")
    assert headroom(engine) == {0: (8, 8, 8), 1: (8, 8, 8)}


def test_running_shared_containers_keep_one_cpu_of_the_pool() -> None:
    engine = CpusetEngine(ONE_NODE)
    assert headroom(engine)[0][2] == 12
    shared_ctr(engine, "web")
    assert headroom(engine)[0][2] == 11


def test_the_minimum_shared_pool_is_kept_on_every_node_at_once() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(min_shared_pool=12))
    assert headroom(engine) == {0: (8, 8, 4), 1: (8, 8, 4)}  # each alone; not 8 together
    integer_ctr(engine, "db", 4)
    assert headroom(engine) == {0: (8, 8, 0), 1: (8, 8, 0)}


def test_cpus_still_draining_are_not_available() -> None:
    engine = CpusetEngine(ONE_NODE, confirm_releases=True)
    integer_ctr(engine, "db", 2)
    annotated_ctr(engine, "io", ",".join(map(str, engine.ledger.entries["db"].cpus)))
    moved_off = engine.draining
    assert moved_off  # the pin moved db: what db left drains until the kernel shows it left
    assert headroom(engine)[0][2] == 12 - 2 - 2 - len(moved_off - engine.ledger.reserved)


def test_with_whole_cores_only_wholly_free_cores_count() -> None:
    whole = Settings(allocation=AllocationOptions(full_physical_cores=True))
    engine = CpusetEngine(ONE_NODE, whole)
    annotated_ctr(engine, "io", "0")  # core 0/6 half taken: neither thread counts
    assert headroom(engine)[0] == (12, 12, 10)
    shared_ctr(engine, "web")  # the pool keeps one CPU: CPU 6 (a pool CPU) is on a taken core
    assert headroom(engine)[0][2] == 10


def test_whole_cores_within_the_pool_floor() -> None:
    whole = Settings(allocation=AllocationOptions(full_physical_cores=True), min_shared_pool=7)
    engine = CpusetEngine(ONE_NODE, whole)
    assert headroom(engine)[0][2] == 4  # 12 - 7 = 5 spare CPUs: two whole cores


@pytest.mark.parametrize(("minimum", "shared", "floor"), [(0, 0, 0), (0, 3, 1), (4, 0, 4),
                                                          (4, 2, 4)])
def test_the_pool_floor(minimum: int, shared: int, floor: int) -> None:
    assert pool_floor(Settings(min_shared_pool=minimum), shared) == floor


def test_a_headroom_is_a_plain_value() -> None:
    node = NodeHeadroom(node=1, capacity=8, allocatable=6, available=2)
    assert node == NodeHeadroom(node=1, capacity=8, allocatable=6, available=2)


# -- the number is the engine's own: on one node it is the largest request admitted ----------

steps = st.lists(st.tuples(st.sampled_from(["shared", "integer", "pin", "release"]),
                           st.integers(min_value=1, max_value=4)), max_size=8)


def _largest_admitted(engine: CpusetEngine, step: int) -> int:
    """The largest integer request the engine admits now (tried downwards from every CPU)."""
    probe = pod("probe")
    for size in range(len(engine.topology.online), 0, -step):
        try:
            engine.plan_create(probe, container("probe", probe, cpu_limit=size))
        except AdmissionError:
            continue
        return size
    return 0


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(min_value=0, max_value=6), st.booleans())
def test_on_one_node_the_available_cpus_are_the_largest_request_the_engine_admits(
        walk: list[tuple[str, int]], minimum: int, whole: bool) -> None:
    chosen = Settings(min_shared_pool=minimum,
                      allocation=AllocationOptions(full_physical_cores=whole))
    engine = CpusetEngine(ONE_NODE, chosen)
    for n, (kind, size) in enumerate(walk):
        name = f"c{n}"
        try:
            if kind == "shared":
                shared_ctr(engine, name)
            elif kind == "integer":
                integer_ctr(engine, name, size)
            elif kind == "pin":
                annotated_ctr(engine, name, f"{size}-{size + 1}")
            elif engine.ledger.entries:
                release(engine, sorted(engine.ledger.entries)[0])
        except AdmissionError:
            continue
    available = headroom(engine)[0][2]
    assert available == _largest_admitted(engine, 2 if whole else 1)
