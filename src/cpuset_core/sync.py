"""Rebuilding the ledger from what the runtime reports (Synchronize, and every reconnect)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from cpuset_core.classify import Classification, classify
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import (
    AdmissionError,
    AnnotationValueError,
    InvalidAnnotationError,
    PinNotAllowedError,
    SharedPoolBelowMinimumError,
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
from cpuset_core.placing import Live, place_pin, shared_entry
from cpuset_core.plan import Plan
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.policy.shared import reserved_pool, shared_pool
from cpuset_core.settings import Settings
from cpuset_core.sync_integers import integer_entries, needs_pool
from cpuset_core.topology import Topology


def rebuild(topology: Topology, settings: Settings, allocator: ExclusiveAllocator, *,
            base: Ledger, pods: Iterable[PodFacts], containers: Iterable[ContainerFacts],
            keep_unlisted: bool = False) -> Plan:
    """Return a plan whose ledger reflects every live container, and the updates that correct
    the running ones. With ``keep_unlisted``, the containers of ``base`` that ``containers``
    does not list are live too, as ``base`` decided them and where they run now.

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
    if keep_unlisted:
        listed = {item.facts.id for item in live}
        pool = shared_pool(topology, base.reserved, settings)
        reserved = reserved_pool(topology, settings)
        live.extend(Live.from_entry(entry, pool, reserved) for cid, entry in base.entries.items()
                    if cid not in listed)
        live.sort(key=lambda item: item.facts.id)
    return rebuild_live(topology, settings, allocator, base=base, live=live, problems=problems,
                        source="synchronize")


def rebuild_live(topology: Topology, settings: Settings, allocator: ExclusiveAllocator, *,
                 base: Ledger, live: list[Live], problems: list[AdmissionError], source: str,
                 new_topology: Topology | None = None) -> Plan:
    """:func:`rebuild` for containers already classified (``live``, sorted by id); also the
    re-plan after a topology change (``new_topology``, carried by the plan for the commit).
    ``source`` names the cause in the corrections' reasons."""
    entries: list[Entry] = []
    pinned = _annotated_entries(topology, settings, live, entries, problems)
    # After a topology change a sibling that came back can leave a whole-core container on
    # half a core; at a synchronize, sets from before the option was on are adopted as they are.
    reserved = reserved_pool(topology, settings)
    integer_entries(topology, settings, allocator, live=live, pinned=pinned, entries=entries,
                     problems=problems, base=base, reserved=reserved,
                     rewhole=new_topology is not None
                     and settings.allocation.full_physical_cores)
    entries.extend(shared_entry(item) for item in live if item.decision.kind is Kind.SHARED)
    result = Ledger.from_entries(entries)
    pool = shared_pool(topology, result.reserved, settings)
    shared = [item for item in live if needs_pool(item, reserved)]
    if shared and not pool:
        problems.append(SharedPoolExhaustedError(
            shared[0].subject, f"{len(shared)} shared container(s) left on their current CPUs"))
    elif len(pool) < settings.min_shared_pool and result.reserved:
        # Running containers put it there (they are not refused at synchronize): report it.
        problems.append(SharedPoolBelowMinimumError("running containers", len(pool),
                                                    settings.min_shared_pool))
    updates = _corrections(topology, result, pool, reserved, live=live, source=source)
    return Plan(base=base, result=result, shared_pool=pool, reserved_pool=reserved,
                moves=updates,
                problems=tuple(problems), topology=new_topology,
                reason=f"synchronized {len(live)} container(s)" if new_topology is None
                else f"{source}: re-placed {len(live)} container(s)")


def _classified(facts: ContainerFacts, pod: PodFacts | None, settings: Settings,
                problems: list[AdmissionError]) -> Live:
    subject = subject_of(pod, facts)
    try:
        decision = classify(pod, facts, settings)
    except InvalidAnnotationError as exc:
        problems.append(exc)
        decision = Classification(kind=Kind.SHARED, reason="invalid pin annotation; kept shared")
    except AnnotationValueError as exc:
        # Running already with a value this version does not read (a pod written for CRI-O,
        # or made without the admission policy): reported, and read as if it were not set.
        problems.append(exc)
        rest = {k: v for k, v in pod.annotations.items() if k != exc.key} if pod else {}
        return _classified(facts, replace(pod, annotations=rest) if pod else None, settings,
                           problems)
    except PinNotAllowedError as exc:
        # Running already (admitted before the allowlist changed, or while the plugin was down):
        # reported, and treated as shared rather than given CPUs it may not claim.
        problems.append(exc)
        decision = Classification(kind=Kind.SHARED, reason="pin not allowed in its namespace; "
                                                           "kept shared")
    return Live(facts, subject, decision)


def _annotated_entries(topology: Topology, settings: Settings, live: list[Live],
                       entries: list[Entry], problems: list[AdmissionError]) -> CPUSet:
    pinned = EMPTY
    for item in live:
        if item.decision.kind is not Kind.ANNOTATED:
            continue
        placed = place_pin(topology, settings, item)
        problems.extend(placed.problems)
        if placed.entry is None:
            # Runs shared until a pinned CPU is back (its pins kept for ``pins_asked``).
            item.decision = Classification(kind=Kind.SHARED, pins=item.decision.pins or EMPTY,
                                           reason="no pinned CPU is online",
                                           quiet=item.decision.quiet)
            continue
        pinned |= placed.entry.cpus
        entries.append(placed.entry)
    return pinned


def _corrections(topology: Topology, result: Ledger, pool: CPUSet, reserved: CPUSet, *,
                 live: list[Live], source: str) -> tuple[ContainerUpdate, ...]:
    updates: list[ContainerUpdate] = []
    every_node = topology.nodes_with_memory()
    for item in live:
        entry = result.entries[item.facts.id]
        target = entry.runs_on(pool, reserved)
        if not target:
            continue  # an empty pool: nothing valid to move shared containers to
        current = item.current
        current_mems = parse_reported(item.facts.mems)
        mems = entry.mems
        if mems is None and current_mems is not None and current_mems != every_node:
            # A former pin (its namespace no longer allowed, or its CPUs gone) must not stay
            # tied to its old node's memory: unpinned containers get the default, every node.
            mems = every_node
        cpus_ok = current == target
        mems_ok = mems is None or current_mems == mems
        if cpus_ok and mems_ok:
            continue
        updates.append(ContainerUpdate(
            container_id=entry.container_id, subject=entry.subject, kind=entry.kind,
            cpus=target, previous_cpus=current if current is not None else topology.online,
            mems=mems,
            previous_mems=None if mems is None else current_mems or every_node,
            reason=f"{source}: runtime reports cpus {item.facts.cpus or 'unset'}"))
    return tuple(updates)

