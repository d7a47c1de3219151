"""A rebuild's integer containers (:mod:`cpuset_core.sync`): valid exclusive sets kept, the
others placed afresh (whole cores again after a sibling came back, where they are free), and
what cannot fit demoted to shared, undoing the latest admissions while the shared pool would be
empty."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cpuset_core.classify import Classification
from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import (
    AdmissionError,
    FullCoresUnavailableError,
    InsufficientCpusError,
    SharedPoolExhaustedError,
)
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import Kind
from cpuset_core.placing import Live, choose_exclusive, integer_entry
from cpuset_core.policy.exclusive import AllocationOptions, ExclusiveAllocator
from cpuset_core.policy.shared import exclusive_free, shared_pool
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology


def needs_pool(item: Live, reserved: CPUSet) -> bool:
    """Whether ``item`` runs on the shared pool: shared (on the reserved CPUs only while one
    is online) or mixed."""
    decision = item.decision
    if decision.kind is Kind.SHARED:
        return not (decision.on_reserved and reserved)
    return decision.kind is Kind.INTEGER and decision.with_shared


def integer_entries(topology: Topology, settings: Settings, allocator: ExclusiveAllocator, *,
                     live: list[Live], pinned: CPUSet, entries: list[Entry],
                     problems: list[AdmissionError], base: Ledger, reserved: CPUSet,
                     rewhole: bool = False) -> None:
    """Keep valid exclusive sets, then allocate the rest; demote to shared what cannot fit.
    With ``rewhole``, a valid set that is not whole cores is re-placed on whole cores when
    they are free, and otherwise kept and reported."""
    shared = [item for item in live if item.decision.kind is Kind.SHARED]
    on_pool = sum(1 for item in live if needs_pool(item, reserved))
    # A set is only really exclusive if no shared container was *placed* on it: a container
    # started while the plugin was down can report a set that looks valid (the whole machine of
    # a small node). Shared containers that report no set or the whole machine were never
    # placed by us, so they are no evidence; the same transaction shrinks them to the pool.
    shared_claimed = CPUSet.union_of(
        claimed for i in shared
        if (claimed := i.current) is not None and claimed != topology.online)
    state = _IntegerPass(topology, settings, pinned, on_pool, problems, entries)
    options = settings.allocation
    pending: list[Live] = []
    halves: list[tuple[Live, CPUSet]] = []
    for item in (i for i in live if i.decision.kind is Kind.INTEGER):
        current = item.current
        if item.decision.with_shared and current is not None:
            current = _own_part(item, current, base, shared_claimed)
        if (current is None or len(current) != item.decision.request
                or not current.isdisjoint(shared_claimed)):
            pending.append(item)
        elif rewhole and allocator.whole_core_cpus(current) != current:
            halves.append((item, current))
        elif not state.admit(item, current):
            pending.append(item)
    for item, current in halves:
        _rewhole(item, current, state=state, allocator=allocator, options=options,
                 pending=pending)
    for item in pending:
        try:
            cpus = _choose(item, state=state, allocator=allocator, options=options)
        except (InsufficientCpusError, FullCoresUnavailableError) as problem:
            state.demote(item, problem)
            continue
        if not state.admit(item, cpus):
            state.demote(item, SharedPoolExhaustedError(
                item.subject, "its exclusive CPUs would take the last shared ones; kept shared"))
    state.make_room_for_demoted()


def _choose(item: Live, *, state: _IntegerPass, allocator: ExclusiveAllocator,
            options: AllocationOptions) -> CPUSet:
    """New exclusive CPUs for ``item``: of the kind its ``isolated-cpus`` answer asks; a
    container that asked for isolated ones and finds too few gets others, saying so (a rebuild
    refuses nobody)."""
    decision = item.decision
    try:
        return choose_exclusive(allocator, options, item.subject, decision.request,
                                state.free(decision.isolated), exclusive=state.exclusive,
                                near=_hint(state.settings, item)).cpus
    except (InsufficientCpusError, FullCoresUnavailableError):
        if not decision.isolated:
            raise
    item.decision = replace(decision, isolated=None, reason=f"{decision.reason}, but too few "
                                                            f"isolated CPUs are free: not "
                                                            f"isolated (best effort)")
    return choose_exclusive(allocator, options, item.subject, decision.request, state.free(),
                            exclusive=state.exclusive, near=_hint(state.settings, item)).cpus


def _own_part(item: Live, current: CPUSet, base: Ledger, shared_claimed: CPUSet) -> CPUSet | None:
    """The exclusive CPUs of a mixed container that runs on ``current`` (its own and the
    pool): the ledger's when it still holds them there, else what the shared containers'
    reports do not claim; ``None`` (placed afresh) when nothing tells them apart."""
    known = base.get(item.facts.id)
    if known is not None and known.with_shared and known.cpus and known.cpus <= current:
        return known.cpus
    return current - shared_claimed if shared_claimed else None


def _hint(settings: Settings, item: Live) -> CPUSet:
    """The device hint a rebuild places ``item`` by: none under the ``none`` policy (a
    rebuild never refuses, so the strict policies place as best effort does)."""
    return item.decision.near if settings.allocation.alignment.uses_devices else EMPTY


def _rewhole(item: Live, current: CPUSet, *, state: _IntegerPass,
             allocator: ExclusiveAllocator, options: AllocationOptions,
             pending: list[Live]) -> None:
    """Whole cores for a container whose set is no longer whole; else it stays, reported."""
    request = item.decision.request
    try:
        cpus: CPUSet | None = choose_exclusive(allocator, options, item.subject, request,
                                               state.free(item.decision.isolated),
                                               exclusive=state.exclusive,
                                               near=_hint(state.settings, item)).cpus
    except (InsufficientCpusError, FullCoresUnavailableError):
        cpus = None  # not enough free CPUs, or none that add up in whole cores
    if cpus is not None and state.admit(item, cpus):
        return
    if state.admit(item, current):
        state.problems.append(FullCoresUnavailableError(
            item.subject, request, f"its CPUs {current} are no longer whole cores (a sibling "
                                   f"came back online) and no whole cores are free; left there"))
    else:
        pending.append(item)


@dataclass(slots=True)
class _IntegerPass:
    """The exclusive CPUs handed out so far during one rebuild."""

    topology: Topology
    settings: Settings
    pinned: CPUSet
    shared_left: int
    problems: list[AdmissionError]
    entries: list[Entry]
    exclusive: CPUSet = EMPTY
    admitted: list[tuple[Live, Entry]] = field(default_factory=list)

    def free(self, isolated: bool | None = None) -> CPUSet:
        """The CPUs still free for a container whose ``isolated-cpus`` answer is ``isolated``."""
        return exclusive_free(self.topology, self.pinned | self.exclusive, self.settings,
                              isolated)

    def admit(self, item: Live, cpus: CPUSet) -> bool:
        """Record ``cpus`` as the container's if they are free (of its kind) and leave a shared
        pool."""
        if not cpus.issubset(self.free(item.decision.isolated)):
            return False
        if (self.shared_left or item.decision.with_shared) and not self._pool(
                self.exclusive | cpus):
            return False
        self.exclusive |= cpus
        self.admitted.append((item, integer_entry(self.topology, item, cpus)))
        return True

    def demote(self, item: Live, problem: AdmissionError) -> None:
        self.problems.append(problem)
        on_pool = item.decision.with_shared  # a mixed container counted already
        item.decision = Classification(kind=Kind.SHARED, reason=f"kept shared: {problem.detail}",
                                       request=item.decision.request,
                                       with_shared=item.decision.with_shared,
                                       quiet=item.decision.quiet)
        self.shared_left += 0 if on_pool else 1

    def make_room_for_demoted(self) -> None:
        """Demotions come after earlier admissions: if the pool ended up empty while shared
        containers exist, undo the latest exclusive admissions until it is not. A shared
        container with nowhere to go would otherwise keep running on exclusive CPUs."""
        while self.shared_left and self.admitted and not self._pool(self.exclusive):
            item, entry = self.admitted.pop()
            self.exclusive -= entry.cpus
            self.demote(item, SharedPoolExhaustedError(
                item.subject, "its exclusive CPUs are the only ones left for shared containers"))
        self.entries.extend(entry for _, entry in self.admitted)

    def _pool(self, exclusive: CPUSet) -> CPUSet:
        return shared_pool(self.topology, self.pinned | exclusive, self.settings)
