"""Placing one container as its classification asks: the rules admission and rebuild share.

A pin gets the online part of its CPUs and their memory nodes; an integer container gets
exclusive CPUs chosen under the operator's allocation options (resized, it keeps what it can of
its own); either becomes a ledger entry here. Admission (``engine``) refuses what does not
hold, raising the problem; a rebuild (``sync``: a synchronize, or the re-plan after CPUs went
on- or offline) keeps what it can and reports the problems. A rebuild that starts from the
ledger rather than from the runtime's report (``hotplug``, and a synchronize keeping the
containers the report does not list) turns entries back into containers to place with
:meth:`Live.from_entry`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from cpuset_core.classify import Classification
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import (
    AdmissionError,
    CpuUnavailableError,
    FullCoresUnavailableError,
    InsufficientCpusError,
    NumaResolutionError,
)
from cpuset_core.ledger import Entry
from cpuset_core.model import ContainerFacts, Kind, parse_reported
from cpuset_core.policy.exclusive import (
    AllocationOptions,
    Choice,
    ExclusiveAllocator,
    WholeCoresUnavailableError,
)
from cpuset_core.policy.numa import NumaUnresolvableError, bound_mems, memory_nodes_for
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology


@dataclass(slots=True)
class Live:
    """A container to place: its facts and its classification (a rebuild may demote it)."""

    facts: ContainerFacts
    subject: str
    decision: Classification
    current: CPUSet | None = field(init=False)
    """The cpuset the runtime reports (``None``: unset), parsed once."""

    def __post_init__(self) -> None:
        self.current = parse_reported(self.facts.cpus)

    @classmethod
    def from_entry(cls, entry: Entry, shared_pool: CPUSet, reserved_pool: CPUSet = EMPTY) -> Live:
        """The ledger's ``entry`` as a live container reporting where it runs now (its own
        CPUs and the pool it shares, ``Entry.runs_on``), classified as it was decided: a pin
        asks what its annotation asked, even the CPUs it lost (``pins_asked``), and an integer
        container its request, as does one demoted to shared for lack of room (every rebuild
        tries it again: CPUs may have been freed)."""
        running = entry.runs_on(shared_pool, reserved_pool)
        facts = ContainerFacts(id=entry.container_id, sandbox_id=entry.sandbox_id,
                               name=entry.subject.rpartition("/")[2], cpus=running.format(),
                               mems="" if entry.mems is None else entry.mems.format())
        if entry.kind is Kind.ANNOTATED or entry.pins_asked is not None:
            pins = entry.pins_asked if entry.pins_asked is not None else entry.cpus
            decision = Classification(kind=Kind.ANNOTATED, pins=pins, reason=entry.reason,
                                      near=entry.near, quiet=entry.quiet)
        elif entry.kind is Kind.INTEGER or entry.request:
            decision = Classification(kind=Kind.INTEGER, request=entry.request,
                                      reason=entry.reason, near=entry.near,
                                      bind_memory=entry.mems is not None,
                                      with_shared=entry.with_shared, isolated=entry.isolated,
                                      quiet=entry.quiet)
        else:
            decision = Classification(kind=Kind.SHARED, reason=entry.reason, near=entry.near,
                                      on_reserved=entry.on_reserved, quiet=entry.quiet)
        return cls(facts, entry.subject, decision)


@dataclass(frozen=True, slots=True)
class Pinned:
    """A pin placed: its entry (``None`` when none of its CPUs is online) and the problems."""

    entry: Entry | None
    problems: tuple[AdmissionError, ...]


def place_pin(topology: Topology, settings: Settings, item: Live) -> Pinned:
    """The pin ``item`` asks, on the online part of its CPUs, with their memory nodes.

    Problems, in this order: pinned CPUs that are offline (:class:`CpuUnavailableError`; the
    entry keeps the online part and remembers the whole pin as ``pins_asked``), and memory
    nodes that cannot be resolved (:class:`NumaResolutionError`; the entry leaves mems as they
    are).
    """
    pins = item.decision.pins or EMPTY
    usable = pins & topology.online
    problems: list[AdmissionError] = []
    if usable != pins:
        problems.append(CpuUnavailableError(item.subject, settings.pin_annotation, pins.format(),
                                            (pins - usable).format(), topology.online.format()))
    if not usable:
        return Pinned(None, tuple(problems))
    mems: CPUSet | None = None
    try:
        mems = memory_nodes_for(topology, usable)
    except NumaUnresolvableError as exc:
        problems.append(NumaResolutionError(item.subject, usable.format(), str(exc)))
    entry = Entry(container_id=item.facts.id, subject=item.subject,
                  sandbox_id=item.facts.sandbox_id, kind=Kind.ANNOTATED, cpus=usable, mems=mems,
                  reason=item.decision.reason, pins_asked=pins if usable != pins else None,
                  near=item.decision.near, quiet=item.decision.quiet)
    return Pinned(entry, tuple(problems))


def away_from_devices(topology: Topology, cpus: CPUSet, near: CPUSet) -> str:
    """What a placement's reason says when ``cpus`` lie outside the NUMA nodes ``near`` of the
    container's devices ("" when they do not, or without a hint). A pin keeps what it asked;
    this says it is remote."""
    nodes = topology.numa_nodes_of(cpus)
    if not near or nodes <= near:
        return ""
    return f"away from its devices: CPUs {cpus} on NUMA node {nodes}, devices on {near}"


def away_by_kind(topology: Topology, entries: Iterable[Entry]) -> dict[Kind, int]:
    """How many pinned and integer ``entries`` run outside their devices' NUMA nodes, by kind
    (for a gauge: pins that asked for it, integer containers the hint could not hold)."""
    return dict(Counter(e.kind for e in entries if e.kind is not Kind.SHARED
                        and away_from_devices(topology, e.cpus, e.near)))


def choose_exclusive(allocator: ExclusiveAllocator, options: AllocationOptions, subject: str,
                     count: int, free: CPUSet, *, exclusive: CPUSet,
                     prefer_numa: CPUSet | None = None, near: CPUSet = EMPTY) -> Choice:
    """``count`` exclusive CPUs out of ``free`` for ``subject``, under the operator's
    allocation ``options`` (``exclusive``, ``prefer_numa``, ``near``: see
    ``ExclusiveAllocator.choose``).

    Raises :class:`InsufficientCpusError` when ``free`` holds fewer than ``count``, and
    :class:`FullCoresUnavailableError` when whole cores cannot make ``count``.
    """
    if count > len(free):
        raise InsufficientCpusError(subject, count, len(free))
    try:
        return allocator.choose(free, count, exclusive=exclusive, prefer_numa=prefer_numa,
                                near=near, options=options)
    except WholeCoresUnavailableError as exc:
        raise FullCoresUnavailableError(subject, count, exc.detail) from exc



def resize_exclusive(topology: Topology, allocator: ExclusiveAllocator,
                     options: AllocationOptions, item: Live, current: CPUSet, *, free: CPUSet,
                     exclusive: CPUSet) -> tuple[CPUSet, str]:
    """The CPUs integer container ``item`` owns once resized from ``current`` to its request,
    and how they were chosen. ``free``: the exclusive-free CPUs, its own included. Raises
    :class:`InsufficientCpusError` or :class:`FullCoresUnavailableError` naming the size asked.
    """
    subject, wanted = item.subject, item.decision.request
    if options.full_physical_cores and allocator.whole_core_cpus(current) != current:
        # Placed before whole-core mode was on: growing or shrinking it in place would keep a
        # half core, so it is placed afresh (its own CPUs count as free), near its memory.
        choice = choose_exclusive(allocator, options, subject, wanted, free,
                                  exclusive=exclusive, prefer_numa=topology.numa_nodes_of(current),
                                  near=item.decision.near)
        return choice.cpus, f"re-placed on whole cores, {choice.describe()}"
    if wanted < len(current):
        # Its own CPUs are the free set: the allocator keeps whole cores and one NUMA node.
        choice = choose_exclusive(allocator, options, subject, wanted, current,
                                  exclusive=exclusive)
        return choice.cpus, f"shrunk from {len(current)}, kept {choice.describe()}"
    free, extra = free - current, wanted - len(current)
    if extra > len(free):
        raise InsufficientCpusError(subject, wanted, len(free) + len(current))
    try:
        choice = choose_exclusive(allocator, options, subject, extra, free, exclusive=exclusive,
                                  prefer_numa=topology.numa_nodes_of(current),
                                  near=item.decision.near)
    except FullCoresUnavailableError as exc:  # name the size asked, not the step
        raise FullCoresUnavailableError(
            subject, wanted, f"growing from {len(current)} by {extra}: {exc.why}") from exc
    return current | choice.cpus, f"grown from {len(current)}, added {choice.describe()}"


def integer_entry(topology: Topology, item: Live, cpus: CPUSet,
                  reason: str | None = None) -> Entry:
    """``item`` as an integer container owning ``cpus`` (``reason``: its classification's),
    with the memory nodes of ``cpus`` when its memory is bound."""
    return Entry(container_id=item.facts.id, subject=item.subject,
                 sandbox_id=item.facts.sandbox_id, kind=Kind.INTEGER, cpus=cpus,
                 mems=bound_mems(topology, cpus) if item.decision.bind_memory else None,
                 request=item.decision.request, near=item.decision.near,
                 with_shared=item.decision.with_shared, isolated=item.decision.isolated,
                 quiet=item.decision.quiet,
                 reason=item.decision.reason if reason is None else reason)



def shared_entry(item: Live) -> Entry:
    """``item`` on a pool: the shared one, or the reserved CPUs when it asks. A demoted pin or
    integer (or mixed) container keeps what it asked, so a later rebuild tries it again."""
    return Entry(container_id=item.facts.id, subject=item.subject,
                 sandbox_id=item.facts.sandbox_id, kind=Kind.SHARED, reason=item.decision.reason,
                 pins_asked=item.decision.pins, request=item.decision.request,
                 near=item.decision.near, on_reserved=item.decision.on_reserved,
                 with_shared=item.decision.with_shared, isolated=item.decision.isolated,
                 quiet=item.decision.quiet)
