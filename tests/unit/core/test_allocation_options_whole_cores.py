"""The whole-physical-cores allocation option: in the allocator (threads whose sibling is taken,
odd requests, spanning) and through the engine (admissions, moves off a pin, resizes,
synchronize).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.cpuset import CPUSet
from cpuset_core.engine import CpusetEngine
from cpuset_core.errors import FullCoresUnavailableError, InsufficientCpusForReassignmentError
from cpuset_core.invariants import violations
from cpuset_core.model import Kind
from cpuset_core.policy.exclusive import ExclusiveAllocator, WholeCoresUnavailableError
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION, Settings
from tests.builders.facts import container, pod
from tests.unit.core.topologies import ALLOCATOR_SHAPES, DUAL_SOCKET, FIRST_SIBLING_OFFLINE, cpus
from tests.unit.core.whole_cores import WHOLE, splits_no_core

ALLOCATORS: Mapping[str, ExclusiveAllocator] = {
    name: ExclusiveAllocator(topology) for name, topology in ALLOCATOR_SHAPES.items()
}


# -- whole physical cores --------------------------------------------------------------------


def test_whole_cores_skip_a_free_thread_whose_sibling_is_taken() -> None:
    # DUAL_SOCKET: cores {n, n+8}. CPU 8 is taken, so CPU 0 is an orphan: the default takes it
    # for a single CPU; whole-core mode may not, and a pair goes to a wholly free core.
    free = DUAL_SOCKET.online - cpus("8")
    assert ExclusiveAllocator(DUAL_SOCKET).take(free, 1) == cpus("0")
    assert ExclusiveAllocator(DUAL_SOCKET).take(free, 2, options=WHOLE) == cpus("1,9")


def test_whole_cores_refuse_an_odd_request_on_smt2_naming_the_threads_per_core() -> None:
    with pytest.raises(WholeCoresUnavailableError,
                       match="3 is not a multiple of the 2 threads per core"):
        ExclusiveAllocator(DUAL_SOCKET).choose(DUAL_SOCKET.online, 3, options=WHOLE)


def test_whole_cores_refuse_when_free_threads_are_only_in_half_used_cores() -> None:
    free = cpus("0-3")  # every core's sibling (8-11) is taken
    with pytest.raises(WholeCoresUnavailableError,
                       match="only 0 free CPU\\(s\\) lie in wholly free cores"):
        ExclusiveAllocator(DUAL_SOCKET).choose(free, 2, options=WHOLE)


def test_whole_cores_count_a_core_with_an_offline_sibling_as_whole() -> None:
    # CPU 0's sibling (4) is offline: {0} is a whole core of one thread, so 3 = {0} + a pair.
    taken = ExclusiveAllocator(FIRST_SIBLING_OFFLINE).take(FIRST_SIBLING_OFFLINE.online, 3,
                                                           options=WHOLE)
    assert len(taken) == 3
    assert splits_no_core(FIRST_SIBLING_OFFLINE, taken)
    assert 0 in taken


def test_whole_cores_span_nodes_only_with_whole_cores() -> None:
    # Node 0 has 7 free CPUs but only 3 whole cores; 10 CPUs need node 1 too, whole cores only.
    free = DUAL_SOCKET.online - cpus("8")
    taken = ExclusiveAllocator(DUAL_SOCKET).take(free, 10, options=WHOLE)
    assert len(taken) == 10
    assert splits_no_core(DUAL_SOCKET, taken)


@settings(max_examples=200, deadline=None)
@given(shape=st.sampled_from(sorted(ALLOCATORS)), data=st.data())
def test_whole_core_mode_never_splits_a_core_and_refuses_only_when_it_must(
        shape: str, data: st.DataObject) -> None:
    topology, allocator = ALLOCATOR_SHAPES[shape], ALLOCATORS[shape]
    online = sorted(topology.online)
    free = CPUSet(data.draw(st.sets(st.sampled_from(online), min_size=1)))
    count = data.draw(st.integers(1, len(free)))
    whole = allocator.whole_core_cpus(free)
    sizes = sorted((len(core & whole) for core in topology.cores_within(whole)), reverse=True)
    try:
        taken = allocator.take(free, count, options=WHOLE)
    except WholeCoresUnavailableError:
        # Refused: no subset of the wholly free cores' sizes adds up to the request.
        reachable = {0}
        for size in sizes:
            reachable |= {r + size for r in reachable}
        assert count not in reachable
        return
    assert len(taken) == count
    assert taken <= whole
    assert splits_no_core(topology, taken)


def test_engine_refuses_an_odd_integer_request_in_full_core_mode_and_changes_nothing() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(allocation=WHOLE))
    p = pod("odd")
    before = engine.ledger
    with pytest.raises(FullCoresUnavailableError) as caught:
        engine.plan_create(p, container("c", p, cpu_limit=3))
    assert caught.value.reason == "full-cores-unavailable"
    assert str(caught.value) == ("ns/odd/main: needs 3 exclusive CPU(s) as whole physical cores "
                                 "(full_physical_cores) but 3 is not a multiple of the 2 "
                                 "threads per core")
    assert engine.ledger is before


def test_full_core_mode_moves_a_container_off_a_pin_onto_whole_cores() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(allocation=WHOLE))
    p = pod("int")
    engine.commit(plan := engine.plan_create(p, container("int", p, cpu_limit=2)))
    assert plan.placement is not None
    held = plan.placement.cpus
    pin = pod("pin", annotations={DEFAULT_PIN_ANNOTATION: str(held.first())})
    moved = engine.plan_create(pin, container("pin", pin))
    engine.commit(moved)
    (move,) = moved.moves
    assert move.container_id == "int"
    assert len(move.cpus) == 2
    assert held.first() not in move.cpus
    assert splits_no_core(DUAL_SOCKET, move.cpus)  # not the pinned core's other thread
    assert violations(DUAL_SOCKET, engine.ledger, engine.settings) == []


def test_full_core_mode_refuses_a_pin_when_only_half_cores_could_take_the_moved_container() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(allocation=WHOLE))
    p = pod("int")
    engine.commit(engine.plan_create(p, container("int", p, cpu_limit=2)))
    # Every other core is half pinned: threads are free, but no whole core is.
    half = pod("half", annotations={DEFAULT_PIN_ANNOTATION: "1-7"})
    engine.commit(engine.plan_create(half, container("half", half)))
    pin = pod("pin", annotations={DEFAULT_PIN_ANNOTATION: "0"})
    with pytest.raises(InsufficientCpusForReassignmentError,
                       match="needs 2 free CPU\\(s\\) in wholly free cores"):
        engine.plan_create(pin, container("pin", pin))


def test_full_core_mode_resize_keeps_whole_cores_and_refuses_an_odd_size() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(allocation=WHOLE))
    p = pod("grow")
    engine.commit(engine.plan_create(p, container("c", p, cpu_limit=2)))
    grown = engine.plan_resize(p, container("c", p, cpu_limit=4))
    engine.commit(grown)
    assert grown.placement is not None
    assert splits_no_core(DUAL_SOCKET, grown.placement.cpus)
    with pytest.raises(FullCoresUnavailableError, match="3 is not a multiple"):
        engine.plan_resize(p, container("c", p, cpu_limit=3))


def test_synchronize_in_full_core_mode_reports_a_container_it_cannot_give_whole_cores() -> None:
    engine = CpusetEngine(DUAL_SOCKET, Settings(allocation=WHOLE))
    p = pod("odd")
    plan = engine.plan_synchronize([p], [container("c", p, cpu_limit=3, cpus_now="")])
    (problem,) = plan.problems
    assert isinstance(problem, FullCoresUnavailableError)
    assert plan.result.entries["c"].kind is Kind.SHARED
