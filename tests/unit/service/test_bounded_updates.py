"""Updates the runtime applies while its other events wait come in bounded batches: the answer
to a stop and every background call carry at most ``MAX_BATCH`` containers; the rest follow,
each container once, until every one has its placement."""

from __future__ import annotations

from cpuset_core import CPUSet, CpusetEngine
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.pusher import MAX_BATCH
from tests.builders.facts import container, pod

SHARED = 2 * MAX_BATCH + 7


def crowded() -> tuple[PlacementService, list[str]]:
    service = PlacementService(CpusetEngine(build_topology(DUAL_SOCKET_HT)))
    ids = []
    for n in range(SHARED):
        web = pod(f"web{n}", qos="burstable")
        service.admit(web, container(f"c{n:04d}", web))
        ids.append(f"c{n:04d}")
    return service, ids


def test_a_stop_answer_carries_one_batch_of_growth_and_the_pusher_the_rest() -> None:
    service, shared = crowded()
    db = pod("db")
    admission = service.admit(db, container("pg", db, cpu_limit=2))
    assert len(admission.updates) == SHARED  # every shrink rides on the creation: unbounded
    grown = CPUSet(range(16))

    answer = service.stop("pg", "ns/db/main")
    assert len(answer) == MAX_BATCH
    assert all(u.cpus == grown for u in answer)
    batches = []
    while batch := service.pusher.take_batch():
        batches.append(batch)
    assert [len(b) for b in batches] == [MAX_BATCH, SHARED - 2 * MAX_BATCH]
    sent = [u.container_id for u in [*answer, *(u for b in batches for u in b)]]
    assert sorted(sent) == shared  # each once
    assert service.pusher.pending() == frozenset()


def test_an_answer_takes_at_most_one_batch_of_what_is_pending() -> None:
    service, shared = crowded()
    service.pusher.force(shared)  # e.g. repairs the verifier asked for
    other = pod("other", qos="burstable")
    admission = service.admit(other, container("new", other))
    assert len(admission.updates) <= MAX_BATCH
    assert len(service.pusher.pending()) == SHARED - len(admission.updates)
