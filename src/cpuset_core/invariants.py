"""The ledger's invariants, written once and numbered.

Checked after every step of the stateful tests and after every synchronize in production
(where a violation is logged and repaired, never crashed on).

1. Every integer container's CPUs are owned by it in ``int_owner``, and nothing else is: no CPU
   has two exclusive owners.
2. ``annot_refs[cpu]`` equals the number of annotated containers pinned to ``cpu``.
3. No CPU is both pinned and exclusive.
4. Pinned and exclusive CPUs are online; exclusive CPUs avoid system-reserved CPUs; a
   container that asked for isolated CPUs holds only isolated ones, and the others hold none
   unless ``exclusive_on_isolated`` allows them (and they did not say no).
5. Every integer container holds exactly the number of CPUs it asked for.
6. The shared pool does not overlap any pinned or exclusive CPU.
7. The shared pool is not empty while containers run on it (shared ones, mixed ones, and those
   on the reserved CPUs while none of them is online).
"""

from __future__ import annotations

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.ledger import Ledger
from cpuset_core.model import Kind
from cpuset_core.policy.shared import reserved_pool, shared_pool
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology


def violations(topology: Topology, ledger: Ledger, settings: Settings) -> list[str]:
    """Return a description of every broken invariant (empty when all hold)."""
    return [*_ownership(ledger), *_placement(topology, ledger, settings)]


def _ownership(ledger: Ledger) -> list[str]:
    """Invariants 1, 2, 3 and 5: the indexes agree with the entries."""
    found: list[str] = []
    owners: dict[int, str] = {}
    refs: dict[int, int] = {}
    for entry in ledger.entries.values():
        if entry.kind is Kind.ANNOTATED:
            for cpu in entry.cpus:
                refs[cpu] = refs.get(cpu, 0) + 1
        if entry.kind is not Kind.INTEGER:
            continue
        for cpu in entry.cpus:
            if cpu in owners:
                found.append(f"1: CPU {cpu} owned by {owners[cpu]} and {entry.container_id}")
            owners[cpu] = entry.container_id
        if len(entry.cpus) != entry.request:
            found.append(f"5: {entry.subject} holds {len(entry.cpus)} CPU(s), asked for "
                         f"{entry.request}")
    if owners != dict(ledger.int_owner) or CPUSet(owners) != ledger.exclusive:
        found.append("1: int_owner or the exclusive mask does not match the integer entries")
    if refs != dict(ledger.annot_refs) or CPUSet(refs) != ledger.pinned:
        found.append(f"2: annot_refs {dict(ledger.annot_refs)} != counted {refs}")
    shared = [e.container_id for e in ledger.entries.values() if e.on_shared_pool]
    if sorted(shared) != sorted(ledger.shared):
        found.append(f"1: shared index {ledger.shared} != entries on the shared pool "
                     f"{sorted(shared)}")
    both = ledger.pinned & ledger.exclusive
    if both:
        found.append(f"3: CPU(s) {both} are pinned and exclusive")
    return found


def _placement(topology: Topology, ledger: Ledger, settings: Settings) -> list[str]:
    """Invariants 4, 6 and 7: reservations and the pool fit the machine."""
    found: list[str] = []
    offline = ledger.reserved - topology.online
    if offline:
        found.append(f"4: reserved CPU(s) {offline} are not online")
    if ledger.exclusive & settings.system_reserved:
        found.append(f"4: exclusive CPU(s) {ledger.exclusive & settings.system_reserved} are "
                     f"reserved")
    for entry in ledger.of_kind(Kind.INTEGER):
        # Isolated CPUs go to containers that asked (isolated-cpus) and, under
        # exclusive_on_isolated, to those that did not say; never to those that said no.
        allowed = (entry.isolated is True or (entry.isolated is None
                                              and settings.exclusive_on_isolated))
        wrong = entry.cpus - topology.isolated if entry.isolated else (
            EMPTY if allowed else entry.cpus & topology.isolated)
        if wrong:
            found.append(f"4: exclusive CPU(s) {wrong} of {entry.subject} are "
                         f"{'not ' if entry.isolated else ''}isolated")
    pool = shared_pool(topology, ledger.reserved, settings)
    if not pool.isdisjoint(ledger.reserved):
        found.append(f"6: shared pool {pool} overlaps reserved {ledger.reserved}")
    users = ledger.on_pool(reserved_pool(topology, settings))
    if not pool and users:
        found.append(f"7: shared pool is empty with {len(users)} container(s) on it")
    return found
