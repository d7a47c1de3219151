"""The reservation ledger: who holds which CPUs, as an immutable snapshot.

``annot_refs[cpu]`` counts the annotated containers pinned to ``cpu``; ``int_owner[cpu]`` names the
one integer container that owns it; ``entries`` maps every container id to its entry. A change
returns a new snapshot and leaves the old one untouched, so a plan is simply "the snapshot it
would produce": committing swaps one reference, discarding drops it, and a failed transaction
cannot leave a trace.

Shared containers store no CPUs: they always run on a pool (the shared one, or the reserved
CPUs for ``on_reserved`` ones), which is derived, so a pool change is O(1) here (the adapters
still send one update per container on it). A mixed integer container owns its exclusive CPUs
like any integer one and runs on the shared pool too (``Entry.runs_on``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.model import Kind, Placement, label_of
from cpuset_core.quiet_request import Quiet

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One container's reservation."""

    container_id: str
    subject: str
    sandbox_id: str
    kind: Kind
    cpus: CPUSet = EMPTY
    """Pinned CPUs (annotated) or exclusive CPUs (integer); empty for shared."""
    mems: CPUSet | None = None
    request: int = 0
    """CPUs an integer container asked for; on a shared entry, what a container demoted for
    lack of room asked for (0 for containers that are shared by nature)."""
    reason: str = ""
    pins_asked: CPUSet | None = None
    """For a pin naming CPUs that are offline: every CPU its annotation names (``cpus`` holds
    the online part; a shared entry, none of them is online), so the pin comes back when they
    do. ``None`` otherwise."""
    near: CPUSet = EMPTY
    """The NUMA nodes of its devices (``Classification.near``): a rebuild or a move places it
    near them again."""
    on_reserved: bool = False
    """A shared container that runs on the reserved CPUs instead of the shared pool."""
    with_shared: bool = False
    """An integer container that runs on the shared pool as well as on its own ``cpus``."""
    isolated: bool | None = None
    """An integer container's ``isolated-cpus`` answer (``Classification.isolated``): a move
    or a rebuild takes its CPUs from the same kind."""
    quiet: Quiet | None = None
    """What it asks of its CPUs beyond the cpuset (:mod:`cpuset_core.quiet`)."""

    @property
    def label(self) -> str:
        """``reserved``, ``mixed``, or the kind's name (``model.label_of``)."""
        return label_of(self.kind, on_reserved=self.on_reserved, with_shared=self.with_shared)

    @property
    def on_shared_pool(self) -> bool:
        """Whether it runs on the shared pool (and so is updated whenever the pool changes)."""
        return (self.kind is Kind.SHARED and not self.on_reserved) or self.with_shared

    def runs_on(self, shared_pool: CPUSet, reserved_pool: CPUSet) -> CPUSet:
        """The CPUs it runs on, given the pools: its own, and the pool it shares. With no
        reserved CPU online, a container on them runs on the shared pool (admitted so under
        ``unmet_requests = "best-effort"``, or left so by a topology change) until one is."""
        if self.kind is Kind.SHARED:
            return reserved_pool if self.on_reserved and reserved_pool else shared_pool
        return self.cpus | shared_pool if self.with_shared else self.cpus


_NO_ENTRIES: Mapping[str, Entry] = MappingProxyType({})
_NO_REFS: Mapping[int, int] = MappingProxyType({})
_NO_OWNERS: Mapping[int, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Ledger:
    """An immutable snapshot of every reservation."""

    entries: Mapping[str, Entry] = field(default_factory=lambda: _NO_ENTRIES)
    annot_refs: Mapping[int, int] = field(default_factory=lambda: _NO_REFS)
    int_owner: Mapping[int, str] = field(default_factory=lambda: _NO_OWNERS)
    pinned: CPUSet = EMPTY
    """CPUs with a refcount > 0."""
    exclusive: CPUSet = EMPTY
    """CPUs owned by an integer container."""
    shared: tuple[str, ...] = ()
    """Ids of the containers on the shared pool (``Entry.on_shared_pool``: shared ones and
    mixed integer ones) in admission order (kept incrementally: hot in every plan)."""

    @property
    def reserved(self) -> CPUSet:
        """pinned ∪ exclusive."""
        return self.pinned | self.exclusive

    def __contains__(self, container_id: object) -> bool:
        return container_id in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, container_id: str) -> Entry | None:
        return self.entries.get(container_id)

    def on_pool(self, reserved_pool: CPUSet) -> tuple[str, ...]:
        """Ids of the containers that run on the shared pool, given the pool of the reserved
        CPUs: :attr:`shared`, and those on the reserved CPUs when none of them is online."""
        if reserved_pool:
            return self.shared
        stranded = tuple(cid for cid in sorted(self.entries) if self.entries[cid].on_reserved)
        return (*self.shared, *stranded) if stranded else self.shared

    def of_kind(self, kind: Kind) -> Iterator[Entry]:
        """Yield the entries of one kind in container-id order (deterministic)."""
        for cid in sorted(self.entries):
            entry = self.entries[cid]
            if entry.kind is kind:
                yield entry

    @property
    def shared_count(self) -> int:
        return len(self.shared)

    def shared_ids(self) -> tuple[str, ...]:
        """Return the ids of shared containers, in admission order (deterministic)."""
        return self.shared

    def placement(self, container_id: str, shared_pool: CPUSet,
                  reserved_pool: CPUSet = EMPTY) -> Placement | None:
        """Return where the container should run, given the current pools."""
        entry = self.entries.get(container_id)
        if entry is None:
            return None
        return Placement(kind=entry.kind, cpus=entry.runs_on(shared_pool, reserved_pool),
                         mems=entry.mems, with_shared=entry.with_shared)

    @classmethod
    def from_entries(cls, entries: Iterable[Entry]) -> Ledger:
        """Build a snapshot in one pass (a full rebuild would be quadratic through
        :meth:`with_entry`). Raises ``ValueError`` on a duplicate id or a doubly reserved CPU."""
        by_id: dict[str, Entry] = {}
        refs: dict[int, int] = {}
        owners: dict[int, str] = {}
        pinned = exclusive = 0
        shared: list[str] = []
        for entry in entries:
            if entry.container_id in by_id:
                raise ValueError(f"container {entry.container_id} appears twice")
            by_id[entry.container_id] = entry
            if entry.kind is Kind.ANNOTATED:
                for cpu in entry.cpus:
                    refs[cpu] = refs.get(cpu, 0) + 1
                pinned |= entry.cpus.mask
            elif entry.kind is Kind.INTEGER:
                if entry.cpus.mask & exclusive:
                    raise ValueError(f"CPU(s) {entry.cpus} of {entry.subject} are already "
                                     f"exclusive")
                for cpu in entry.cpus:
                    owners[cpu] = entry.container_id
                exclusive |= entry.cpus.mask
            if entry.on_shared_pool:
                shared.append(entry.container_id)
        if pinned & exclusive:
            raise ValueError(f"CPU(s) {CPUSet.from_mask(pinned & exclusive)} are both pinned "
                             f"and exclusive")
        return cls(MappingProxyType(by_id), MappingProxyType(refs), MappingProxyType(owners),
                   CPUSet.from_mask(pinned), CPUSet.from_mask(exclusive), tuple(shared))

    # -- changes: each returns a new snapshot ----------------------------------------------------

    def with_entry(self, entry: Entry) -> Ledger:
        """Return a snapshot that also holds ``entry`` (replacing one with the same id).

        Raises ``ValueError`` when an integer entry would take a CPU another container owns or a
        pinned CPU, or a pin would land on an exclusive CPU: exclusivity is the ledger's own
        invariant, not only the allocator's.
        """
        base = self.without(entry.container_id) if entry.container_id in self.entries else self
        entries = dict(base.entries)
        entries[entry.container_id] = entry
        refs, owners = base.annot_refs, base.int_owner
        pinned, exclusive, shared = base.pinned, base.exclusive, base.shared
        if entry.kind is Kind.ANNOTATED:
            clash = entry.cpus & exclusive
            if clash:
                raise ValueError(f"CPU(s) {clash} pinned by {entry.subject} are already exclusive "
                                 f"to an integer container (move it first)")
            new_refs = dict(refs)
            for cpu in entry.cpus:
                new_refs[cpu] = new_refs.get(cpu, 0) + 1
            refs, pinned = new_refs, pinned | entry.cpus
        elif entry.kind is Kind.INTEGER:
            clash = entry.cpus & (exclusive | pinned)
            if clash:
                raise ValueError(f"CPU(s) {clash} of {entry.subject} are already reserved")
            new_owners = dict(owners)
            for cpu in entry.cpus:
                new_owners[cpu] = entry.container_id
            owners, exclusive = new_owners, exclusive | entry.cpus
        if entry.on_shared_pool:
            shared = (*shared, entry.container_id)
        return Ledger(MappingProxyType(entries), _freeze(refs), _freeze(owners), pinned, exclusive,
                      shared)

    def without(self, container_id: str) -> Ledger:
        """Return a snapshot without the container (itself when it is not there)."""
        entry = self.entries.get(container_id)
        if entry is None:
            return self
        entries = dict(self.entries)
        del entries[container_id]
        refs, owners = self.annot_refs, self.int_owner
        pinned, exclusive, shared = self.pinned, self.exclusive, self.shared
        if entry.kind is Kind.ANNOTATED:
            new_refs = dict(refs)
            released = 0
            for cpu in entry.cpus:
                count = new_refs[cpu] - 1
                if count:
                    new_refs[cpu] = count
                else:
                    del new_refs[cpu]
                    released |= 1 << cpu
            refs, pinned = new_refs, pinned - CPUSet.from_mask(released)
        elif entry.kind is Kind.INTEGER:
            new_owners = dict(owners)
            for cpu in entry.cpus:
                del new_owners[cpu]
            owners, exclusive = new_owners, exclusive - entry.cpus
        if entry.on_shared_pool:
            shared = tuple(cid for cid in shared if cid != container_id)
        return Ledger(MappingProxyType(entries), _freeze(refs), _freeze(owners), pinned, exclusive,
                      shared)


def _freeze(mapping: Mapping[int, T]) -> Mapping[int, T]:
    # Only dicts built by this module reach here unwrapped, so wrapping without a copy is safe.
    return mapping if isinstance(mapping, MappingProxyType) else MappingProxyType(mapping)
