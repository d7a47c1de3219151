"""What the plugin tells Kubernetes of its decisions, as :class:`PlacementEvent` values: pure
functions of the decision's facts, no I/O (:mod:`event_notices` feeds them from the service).

The reasons are stable (an operator filters on them; they are part of the interface):

* ``ExclusiveCpusAssigned``: an integer container got CPUs of its own, in which domain;
* ``PinnedCpusAssigned``: an annotated container got the CPUs its annotation names, and how
  many other pods pin any of them;
* ``MovedForPin``: an integer container was moved off CPUs a new pin took, naming the pin's pod;
* ``DriftRepaired`` (Warning): the kernel enforced something else (someone wrote the cgroup)
  and the verifier's re-send put it back;
* ``CpusReleasedNeverStarted`` (Warning): a container that will never run gave back its CPUs;
* ``CpusResized``: a running container's resize changed its exclusive CPUs (or its class);
* ``ResizeRefused`` (Warning): a resize the node cannot meet; the container keeps its CPUs;
* ``SharedPoolChanged`` (on the Node): the shared pool now, and before.

Notes state CPU sets in the kernel's list format (``4-5,12-13``).
"""

from __future__ import annotations

from typing import Final

from cpuset_adapters.kubernetes.event_object import PlacementEvent, Regarding, node
from cpuset_core import CPUSet, Topology
from cpuset_core.verify import Mismatch

EXCLUSIVE_ASSIGNED: Final = "ExclusiveCpusAssigned"
PINNED_ASSIGNED: Final = "PinnedCpusAssigned"
MOVED_FOR_PIN: Final = "MovedForPin"
DRIFT_REPAIRED: Final = "DriftRepaired"
RELEASED_NEVER_STARTED: Final = "CpusReleasedNeverStarted"
CPUS_RESIZED: Final = "CpusResized"
RESIZE_REFUSED: Final = "ResizeRefused"
SHARED_POOL_CHANGED: Final = "SharedPoolChanged"
QUIET_REPAIRED: Final = "QuietCpusRepaired"
REASONS: Final = (EXCLUSIVE_ASSIGNED, PINNED_ASSIGNED, MOVED_FOR_PIN, DRIFT_REPAIRED,
                  RELEASED_NEVER_STARTED, CPUS_RESIZED, RESIZE_REFUSED, SHARED_POOL_CHANGED,
                  QUIET_REPAIRED)


def exclusive_assigned(who: Regarding, *, cpus: CPUSet, mems: CPUSet | None,
                       topology: Topology) -> PlacementEvent:
    """An integer container got ``cpus`` of its own (and ``mems``: ``None`` is unbound)."""
    return PlacementEvent(
        regarding=who, reason=EXCLUSIVE_ASSIGNED, action="AssignCpus",
        note=f"exclusive CPUs {cpus} ({domain_of(cpus, topology)}), {_memory(mems)}")


def pinned_assigned(who: Regarding, *, cpus: CPUSet, mems: CPUSet | None,
                    sharing_pods: int) -> PlacementEvent:
    """An annotated container got the pinned ``cpus``; ``sharing_pods`` other pods pin some
    of them too."""
    shared = ("not shared with another pod" if sharing_pods == 0 else
              f"shared with {sharing_pods} other pod{'s' if sharing_pods > 1 else ''}")
    return PlacementEvent(regarding=who, reason=PINNED_ASSIGNED, action="AssignCpus",
                          note=f"pinned CPUs {cpus} ({shared}), {_memory(mems)}")


def moved_for_pin(who: Regarding, *, previous: CPUSet, cpus: CPUSet, pinned_by: str,
                  pinned: CPUSet) -> PlacementEvent:
    """An integer container moved from ``previous`` to ``cpus`` because the pod
    ``pinned_by`` (``namespace/name``) pinned ``pinned`` (those of its CPUs are named; the
    rest of a whole core may have moved with them)."""
    return PlacementEvent(
        regarding=who, reason=MOVED_FOR_PIN, action="MoveCpus",
        note=f"exclusive CPUs moved from {previous} to {cpus}: pod {pinned_by} pins "
             f"{pinned & previous}")


def drift_repaired(who: Regarding, mismatch: Mismatch) -> PlacementEvent:
    """The verifier saw ``mismatch`` in the kernel, re-sent the placement, and a later pass
    showed it enforced."""
    if mismatch.cause == "mems":
        showed = f"cpuset.mems {_text(mismatch.observed_mems)}"
        wrote = f"cpuset.mems {_text(mismatch.expected_mems)}"
    else:
        showed = f"cpuset.cpus {_text(mismatch.observed_cpus)}"
        wrote = f"cpuset.cpus {mismatch.expected_cpus}"
    return PlacementEvent(
        regarding=who, reason=DRIFT_REPAIRED, action="RepairCpuset", type="Warning",
        note=f"the kernel enforced {showed} (check: {mismatch.cause}); wrote back {wrote}")


def quiet_repaired(who: Regarding, *, what: str, cpus: CPUSet, repaired: int,
                   example: str) -> PlacementEvent:
    """``repaired`` files kept for the container's quiet ``cpus`` (``what``) were found
    changed back, by irqbalance, a driver or a hand, and rewritten (``example``: the first,
    naming the IRQ or the CPU's file)."""
    return PlacementEvent(
        regarding=who, reason=QUIET_REPAIRED, action="RepairQuietCpus", type="Warning",
        note=f"{repaired} {what} setting(s) of its quiet CPUs {cpus} found changed back and "
             f"rewritten (first: {example})")


def released_never_started(who: Regarding, *, kind: str, cpus: CPUSet,
                           why: str) -> PlacementEvent:
    """A container of ``kind`` that will not run gave back ``cpus`` (its own: pinned or
    exclusive; empty for a shared one) on the start rule's ``why``."""
    held = f"{kind} CPUs {cpus}" if cpus else f"its place in the shared pool ({kind})"
    return PlacementEvent(
        regarding=who, reason=RELEASED_NEVER_STARTED, action="ReleaseCpus", type="Warning",
        note=f"gave back {held}: {why}; a later start is refused")


def cpus_resized(who: Regarding, *, before: CPUSet, after: CPUSet,
                 topology: Topology) -> PlacementEvent:
    """A resize took the container's exclusive CPUs from ``before`` to ``after`` (either
    empty: it ran, or now runs, on the shared pool)."""
    now = (f"exclusive CPUs {after} ({domain_of(after, topology)})" if after
           else "the shared pool")
    was = f"exclusive CPUs {before}" if before else "the shared pool"
    return PlacementEvent(regarding=who, reason=CPUS_RESIZED, action="ResizeCpus",
                          note=f"resized to {now}, was on {was}")


def resize_refused(who: Regarding, *, detail: str) -> PlacementEvent:
    """A resize the node cannot meet (``detail``: the core's words); nothing changed."""
    return PlacementEvent(regarding=who, reason=RESIZE_REFUSED, action="ResizeCpus",
                          type="Warning", note=f"resize refused, CPUs unchanged: {detail}")


def shared_pool_changed(node_name: str, *, before: CPUSet, after: CPUSet) -> PlacementEvent:
    """The shared pool is ``after``; it was ``before`` when last told."""
    return PlacementEvent(
        regarding=node(node_name), reason=SHARED_POOL_CHANGED, action="ResizeSharedPool",
        note=f"shared pool {_counted(after)}, was {_counted(before)}")


def domain_of(cpus: CPUSet, topology: Topology) -> str:
    """The smallest domain holding ``cpus`` (an L3 group smaller than its NUMA node, a NUMA
    node, or the NUMA nodes they span) and whether they are whole cores (every online thread
    of each core they touch)."""
    nodes = topology.numa_nodes_of(cpus)
    if len(nodes) == 1:
        only = nodes.first()
        node_cpus = topology.cpus_of_numa(only) & topology.online
        groups = [g & topology.online for g in topology.l3_groups if cpus.issubset(g)]
        where = (f"L3 group {groups[0]} of NUMA node {only}"
                 if groups and len(groups[0]) < len(node_cpus) else f"NUMA node {only}")
    else:
        where = f"NUMA nodes {nodes}"
    whole = all((core & topology.online).issubset(cpus) for core in topology.cores_within(cpus))
    return f"{where}, {'whole cores' if whole else 'not whole cores'}"


def _memory(mems: CPUSet | None) -> str:
    return "memory nodes not bound" if mems is None else f"memory nodes {mems}"


def _text(cpus: CPUSet | None) -> str:
    return "unset" if cpus is None else str(cpus) or "empty"


def _counted(cpus: CPUSet) -> str:
    return f"{cpus or 'empty'} ({len(cpus)} CPU{'' if len(cpus) == 1 else 's'})"
