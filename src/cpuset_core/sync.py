"""Rebuilding the ledger from what the runtime reports (Synchronize, and every reconnect)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cpuset_core.classify import Classification, classify
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import (
    AdmissionError,
    CpuUnavailableError,
    InsufficientCpusError,
    InvalidAnnotationError,
    NumaResolutionError,
    SharedPoolExhaustedError,
)
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import (
    ContainerFacts,
    ContainerUpdate,
    Kind,
    PodFacts,
    parse_reported,
    subject_of,
)
from cpuset_core.plan import Plan
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.policy.numa import NumaUnresolvableError, memory_nodes_for
from cpuset_core.policy.shared import exclusive_free, shared_pool
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology


@dataclass(slots=True)
class _Live:
    facts: ContainerFacts
    pod: PodFacts | None
    subject: str
    decision: Classification


def rebuild(topology: Topology, settings: Settings, allocator: ExclusiveAllocator, *,
            base: Ledger, pods: Iterable[PodFacts], containers: Iterable[ContainerFacts]) -> Plan:
    """Return a plan whose ledger reflects every live container, and the updates that correct
    the running ones.

    Order, so that the result is deterministic and disturbs as little as possible:
    1. annotated containers take their pins (their online part; offline pins are reported);
    2. integer containers that already hold a valid exclusive set keep it;
    3. the other integer containers get new CPUs (or stay shared, reported, if none fit);
    4. shared containers get the pool; if the pool is empty they are left alone (reported).
    """
    pods_by_id = {pod.sandbox_id: pod for pod in pods}
    problems: list[AdmissionError] = []
    live = [_classified(c, pods_by_id.get(c.sandbox_id), settings, problems)
            for c in sorted(containers, key=lambda c: c.id)]
    entries: list[Entry] = []
    pinned = _annotated_entries(topology, settings, live, entries, problems)
    _integer_entries(topology, settings, allocator, live=live, pinned=pinned, entries=entries,
                     problems=problems)
    shared = [item for item in live if item.decision.kind is Kind.SHARED]
    entries.extend(Entry(container_id=s.facts.id, subject=s.subject, sandbox_id=s.facts.sandbox_id,
                         kind=Kind.SHARED, reason=s.decision.reason) for s in shared)
    result = Ledger.from_entries(entries)
    pool = shared_pool(topology, result.reserved, settings)
    if shared and not pool:
        problems.append(SharedPoolExhaustedError(
            shared[0].subject, f"{len(shared)} shared container(s) left on their current CPUs"))
    updates = _corrections(topology, result, pool, live)
    return Plan(base=base, result=result, shared_pool=pool, updates=updates,
                problems=tuple(problems), reason=f"synchronized {len(live)} container(s)")


def _classified(facts: ContainerFacts, pod: PodFacts | None, settings: Settings,
                problems: list[AdmissionError]) -> _Live:
    subject = subject_of(pod, facts)
    try:
        decision = classify(pod, facts, settings)
    except InvalidAnnotationError as exc:
        problems.append(exc)
        decision = Classification(kind=Kind.SHARED, reason="invalid pin annotation; kept shared")
    return _Live(facts, pod, subject, decision)


def _annotated_entries(topology: Topology, settings: Settings, live: list[_Live],
                       entries: list[Entry], problems: list[AdmissionError]) -> CPUSet:
    pinned = EMPTY
    for item in live:
        if item.decision.kind is not Kind.ANNOTATED:
            continue
        pins = item.decision.pins or EMPTY
        usable = pins & topology.online
        if usable != pins:
            problems.append(CpuUnavailableError(item.subject, settings.pin_annotation,
                                                pins.format(), (pins - usable).format(),
                                                topology.online.format()))
        if not usable:
            item.decision = Classification(kind=Kind.SHARED, reason="no pinned CPU is online")
            continue
        try:
            mems: CPUSet | None = memory_nodes_for(topology, usable)
        except NumaUnresolvableError as exc:
            problems.append(NumaResolutionError(item.subject, usable.format(), str(exc)))
            mems = None
        pinned |= usable
        entries.append(Entry(container_id=item.facts.id, subject=item.subject,
                             sandbox_id=item.facts.sandbox_id, kind=Kind.ANNOTATED, cpus=usable,
                             mems=mems, reason=item.decision.reason))
    return pinned


def _integer_entries(topology: Topology, settings: Settings, allocator: ExclusiveAllocator, *,
                     live: list[_Live], pinned: CPUSet, entries: list[Entry],
                     problems: list[AdmissionError]) -> None:
    def free_now() -> CPUSet:
        return exclusive_free(topology, pinned | exclusive, settings)

    exclusive = EMPTY
    pending: list[_Live] = []
    integers = [item for item in live if item.decision.kind is Kind.INTEGER]
    for item in integers:
        current = parse_reported(item.facts.cpus)
        if (current is not None and len(current) == item.decision.request
                and current.issubset(free_now())):
            exclusive |= current
            entries.append(_integer_entry(item, current))
        else:
            pending.append(item)
    shared_left = sum(1 for item in live if item.decision.kind is Kind.SHARED)
    for item in pending:
        free = free_now()
        request = item.decision.request
        if request > len(free):
            problems.append(InsufficientCpusError(item.subject, request, len(free)))
            item.decision = Classification(kind=Kind.SHARED, reason="no room for its exclusive "
                                                                    "CPUs; kept shared")
            shared_left += 1
            continue
        cpus = allocator.take(free, request, exclusive=exclusive)
        pool_after = shared_pool(topology, pinned | exclusive | cpus, settings)
        if shared_left and not pool_after:
            problems.append(SharedPoolExhaustedError(
                item.subject, "its exclusive CPUs would take the last shared ones; kept shared"))
            item.decision = Classification(kind=Kind.SHARED, reason="kept shared: pool would "
                                                                    "be empty")
            shared_left += 1
            continue
        exclusive |= cpus
        entries.append(_integer_entry(item, cpus))


def _integer_entry(item: _Live, cpus: CPUSet) -> Entry:
    return Entry(container_id=item.facts.id, subject=item.subject,
                 sandbox_id=item.facts.sandbox_id, kind=Kind.INTEGER, cpus=cpus,
                 request=item.decision.request, reason=item.decision.reason)


def _corrections(topology: Topology, result: Ledger, pool: CPUSet,
                 live: list[_Live]) -> tuple[ContainerUpdate, ...]:
    updates: list[ContainerUpdate] = []
    for item in live:
        entry = result.entries[item.facts.id]
        target = pool if entry.kind is Kind.SHARED else entry.cpus
        if not target:
            continue  # an empty pool: nothing valid to move shared containers to
        current = parse_reported(item.facts.cpus)
        current_mems = parse_reported(item.facts.mems)
        cpus_ok = current == target
        mems_ok = entry.mems is None or current_mems == entry.mems
        if cpus_ok and mems_ok:
            continue
        updates.append(ContainerUpdate(
            container_id=entry.container_id, subject=entry.subject, kind=entry.kind,
            cpus=target, previous_cpus=current if current is not None else topology.online,
            mems=entry.mems, previous_mems=current_mems,
            reason=f"synchronize: runtime reports cpus {item.facts.cpus or 'unset'}"))
    return tuple(updates)

