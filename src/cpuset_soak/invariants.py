"""The soak's invariants on a kernel view, pure: each check returns the violations it found as
sentences naming the containers and the CPUs.

Always (checked continuously while operations run): no CPU in the kernel cpusets of two
exclusive owners (integer vs integer, integer vs pin; a mixed container's whole cpuset, its own
CPUs and the pool, against both). After settling: shared containers on exactly ``online −
reserved − pins − exclusive`` (the pool); every pin on exactly its annotation (its online part)
with the memory nodes of those CPUs; every integer container on exactly its N CPUs, outside
reserved; every mixed one on its N own CPUs (outside pins and reserved) and the pool; every
container on the reserved CPUs on exactly ``reserved ∩ online``; the plugin's state document
equal to the kernel. After settling too: no container that does not run holds anything — none
the runtime reports exited, none it reports created and not started longer than the start grace
(and its watch's slack) — and the kernel's shared pool holds again the CPUs such containers
were given; those created and within their grace (``held``) are kept out of the pool. At the
end: the plugin's state empty and its pool the whole of ``online − reserved``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from itertools import combinations
from typing import Any, Final

from cpuset_adapters.cri.results import ContainerInfo
from cpuset_core.cpuset import EMPTY, CPUSet

from .kernel import KernelView
from .model import (
    BEST_EFFORT,
    EXCLUSIVE,
    EXPIRED,
    FAILED,
    INTEGER,
    MIXED,
    PINNED,
    RESERVED,
    SHARED,
    Container,
    Node,
)

HOLDS: Final = {"integer": "exclusive CPU(s) {}", "annotated": "a pin reference on {}",
                "shared": "a place in the shared pool",
                "mixed": "exclusive CPU(s) and the shared pool, {}",
                "reserved": "a place on the reserved CPUs"}
"""What a state document's entry holds, by its ``kind``."""


def _name(c: Container) -> str:
    return f"{c.pod}/{c.name} ({c.kind}, {c.cid[:12]})"


def exclusive_owners(node: Node, view: KernelView) -> list[str]:
    """No CPU enforced for two exclusive owners. Containers created while the plugin was
    away, or whose cpuset someone else wrote, are not owners until the node settles; one
    whose runtime refuses updates may stay on a pin (a refused move, docs/operations.md) but
    never on another integer container's CPUs."""
    owners = [c for c in node.running() if c.kind in (INTEGER, PINNED, MIXED)
              and not c.unmanaged and not c.tampered and c.cid in view]
    found = []
    for a, b in combinations(owners, 2):
        if a.kind == b.kind and a.kind in (PINNED, MIXED):
            continue  # pins may overlap by design, mixed containers share the pool
        if (a.faulted or b.faulted) and PINNED in (a.kind, b.kind):
            continue
        shared = view[a.cid].cpus & view[b.cid].cpus
        if shared:
            found.append(f"CPU(s) {shared} enforced for two exclusive owners: {_name(a)} on "
                         f"{view[a.cid].cpus} and {_name(b)} on {view[b.cid].cpus}")
    return found


def kernel_agrees(node: Node, view: KernelView) -> list[str]:
    """The cgroup and the process agree (cgroup v1 and v2 both apply a cpuset to its tasks)."""
    return [f"{_name(c)}: cgroup cpus {view[c.cid].cpus} but its process may run on "
            f"{view[c.cid].process_cpus}" for c in node.running()
            if c.cid in view and view[c.cid].process_cpus
            and view[c.cid].process_cpus != view[c.cid].cpus]


def placements(node: Node, view: KernelView, nodes_of: Callable[[CPUSet], CPUSet],
               all_mems: CPUSet, held: CPUSet = EMPTY) -> list[str]:
    """After settling: every running container exactly where the rules put it (``held``: the
    CPUs of integer containers created and waiting for their start, off the pool too)."""
    running = [c for c in node.running() if not c.faulted]
    missing = [c for c in running if c.cid not in view]
    found = [f"{_name(c)}: running, but no cgroup to read" for c in missing]
    integers = [c for c in running if c.kind == INTEGER and c.cid in view]
    pins = node.pins()
    found += _exclusive_placements(node, view, running, integers, pins=pins, nodes_of=nodes_of)
    found += _reserved_placements(node, view, running, all_mems)
    if any(c.faulted and c.kind in EXCLUSIVE for c in node.running()):
        return found  # where a refused integer container's CPUs went is not known
    mixed = [c for c in running if c.kind == MIXED and c.cid in view]
    exclusive = CPUSet.union_of(view[c.cid].cpus for c in integers)
    pool = node.online - pins - exclusive - held - CPUSet.union_of(c.actual for c in mixed)
    if node.strict_reservation:
        pool -= node.reserved
    if not pool:
        return found  # nowhere valid to put them: a synchronize leaves them where they run
    for c in running:
        if c.kind in (SHARED, BEST_EFFORT) and c.cid in view:
            got = view[c.cid]
            if got.cpus != pool or got.mems != all_mems:
                found.append(f"{_name(c)}: shared, expected {pool} (mems {all_mems}), the "
                             f"kernel enforces {got.cpus} (mems {got.mems})")
    return found + _mixed_placements(node, view, mixed, pool=pool, pins=pins, all_mems=all_mems)


def _mixed_placements(node: Node, view: KernelView, mixed: list[Container], *, pool: CPUSet,
                      pins: CPUSet, all_mems: CPUSet) -> list[str]:
    """Every mixed container on its own N CPUs (``actual``: what the plugin's state document
    says it owns, off pins and reserved) and the pool, with every memory node."""
    found = []
    for c in mixed:
        got, own = view[c.cid], c.actual
        if len(own) != c.cpus or not own.isdisjoint(pins | node.reserved):
            found.append(f"{_name(c)}: mixed, asked {c.cpus} exclusive CPU(s), owns {own}, "
                         f"which is not that many or meets pins {pins} or reserved "
                         f"{node.reserved}")
        if got.cpus != own | pool or got.mems != all_mems:
            found.append(f"{_name(c)}: mixed, expected its {own} and the pool {pool} (mems "
                         f"{all_mems}), the kernel enforces {got.cpus} (mems {got.mems})")
    return found


def _reserved_placements(node: Node, view: KernelView, running: list[Container],
                         all_mems: CPUSet) -> list[str]:
    """Every container on the reserved CPUs on exactly the online ones, every memory node."""
    where = node.reserved_pool()
    return [f"{_name(c)}: on the reserved CPUs, expected {where} (mems {all_mems}), the kernel "
            f"enforces {view[c.cid].cpus} (mems {view[c.cid].mems})"
            for c in running if c.kind == RESERVED and c.cid in view
            and (view[c.cid].cpus != where or view[c.cid].mems != all_mems)]


def _exclusive_placements(node: Node, view: KernelView, running: list[Container],
                          integers: list[Container], *, pins: CPUSet,
                          nodes_of: Callable[[CPUSet], CPUSet]) -> list[str]:
    """Every integer container on exactly its N CPUs, off pins and reserved; every pin on
    exactly its annotation's online part, with those CPUs' memory nodes."""
    found: list[str] = []
    for c in integers:
        cpus = view[c.cid].cpus
        if len(cpus) != c.cpus:
            found.append(f"{_name(c)}: asked {c.cpus} exclusive CPU(s), the kernel enforces "
                         f"{cpus}")
        if not cpus.isdisjoint(pins | node.reserved):
            found.append(f"{_name(c)}: on {cpus}, which meets pins {pins} or reserved "
                         f"{node.reserved}")
    for c in running:
        pod = node.pods[c.pod]
        if c.kind == PINNED and c.cid in view and pod.pin is not None:
            got, pin = view[c.cid], pod.pin & node.online  # its online part
            if got.cpus != pin or got.mems != nodes_of(pin):
                found.append(f"{_name(c)}: pinned to {pin} (mems {nodes_of(pin)}), the "
                             f"kernel enforces {got.cpus} (mems {got.mems})")
    return found


def state_matches(node: Node, view: KernelView, state: Mapping[str, Any],
                  waiting: Collection[Container] = ()) -> list[str]:
    """The plugin's state document (``inspect -o json``) says what the kernel enforces, and
    lists the containers created and ``waiting`` for their start within their grace."""
    listed = {str(c["id"]): c for c in state.get("containers", [])}
    running = {c.cid: c for c in node.running()}
    held = {c.cid: c for c in waiting}
    found = [f"inspect does not list running {_name(running[cid])}"
             for cid in sorted(set(running) - set(listed))]
    found += [f"inspect does not list {_name(held[cid])}, created and within its start grace"
              for cid in sorted(set(held) - set(listed))]
    found += [f"inspect lists {cid[:12]} ({listed[cid].get('subject')}), which does not run"
              for cid in sorted(set(listed) - set(running) - set(held))]
    # A shared container the document shows on no CPU has none to go to (an empty pool,
    # reported by the synchronize that found it): it is left where it runs.
    compared = [cid for cid in sorted(set(listed) & set(running))
                if not running[cid].faulted and cid in view and listed[cid]["cpus"] != ""]
    said = {cid: CPUSet.parse(str(listed[cid]["cpus"]), allow_empty=True) for cid in compared}
    found += [f"inspect says {_name(running[cid])} is on {said[cid]}, the kernel enforces "
              f"{view[cid].cpus}" for cid in compared if said[cid] != view[cid].cpus]
    pools = {view[cid].cpus for cid in compared
             if running[cid].kind in (SHARED, BEST_EFFORT) and not running[cid].unmanaged}
    if len(pools) == 1 and (pool := pools.pop()).format() != state.get("shared_pool"):
        found.append(f"inspect says the shared pool is {state.get('shared_pool')!r}, the "
                     f"kernel runs every shared container on {pool}")
    return found


def not_running_holders(state: Mapping[str, Any], listed: Iterable[ContainerInfo], *,
                        now: float, grace_ends: float) -> list[str]:
    """After settling, no container that does not run holds an exclusive CPU, a pin reference
    or a place in the pool: every entry of the plugin's state document whose container the
    runtime reports exited, or created and not started ``grace_ends`` seconds ago or more (the
    start grace and the start watch's slack; ``now``: the epoch's seconds), is found."""
    runtime = {c.id: c for c in listed}
    found = []
    for entry in state.get("containers", []):
        cid = str(entry.get("id"))
        info = runtime.get(cid)
        if info is None:
            continue
        age = now - info.created_at / 1e9 if info.created_at else 0.0
        if info.state == "CONTAINER_EXITED":
            why = "exited (its start failed, or it stopped)"
        elif info.state == "CONTAINER_CREATED" and age >= grace_ends:
            why = f"created {age:.0f} s ago and never started"
        else:
            continue
        holds = HOLDS.get(str(entry.get("kind")), "{}").format(entry.get("cpus"))
        found.append(f"{entry.get('subject')} ({cid[:12]}) is {why}, yet the plugin holds "
                     f"{holds} for it")
    return found


def given_back(node: Node, view: KernelView, held: CPUSet = EMPTY) -> list[str]:
    """After settling, the kernel's shared pool (where the shared containers run) includes the
    CPUs each container that never ran was given — but those pinned, exclusive (in the kernel,
    or ``held`` by a container waiting for its start) or reserved from the pool now."""
    shared = [c for c in node.running() if c.kind in (SHARED, BEST_EFFORT) and c.cid in view
              and not (c.unmanaged or c.faulted or c.tampered)]
    pools = {view[c.cid].cpus for c in shared}
    if len(pools) != 1:
        return []
    pool = pools.pop()
    taken = node.pins() | held | CPUSet.union_of(
        view[c.cid].cpus for c in node.running() if c.kind == INTEGER and c.cid in view
    ) | CPUSet.union_of(c.actual for c in node.running() if c.kind == MIXED)
    if node.strict_reservation:
        taken |= node.reserved
    found = []
    for pod in node.pods.values():
        for c in pod.containers.values():
            missing = (c.actual & node.online) - pool - taken
            if c.state in (FAILED, EXPIRED) and missing:
                why = "whose start failed" if c.state == FAILED else "never started"
                found.append(f"{_name(c)}, {why}, was given CPU(s) {missing}: the kernel's "
                             f"shared pool {pool} still lacks them")
    return found


def empty_state(node: Node, state: Mapping[str, Any]) -> list[str]:
    """At the end, every pod deleted: nothing held, the pool is ``online − reserved``."""
    found = []
    pool = node.online - node.reserved if node.strict_reservation else node.online
    if state.get("containers"):
        found.append(f"the plugin still holds {len(state['containers'])} container(s): "
                     f"{[c.get('subject') for c in state['containers']]}")
    found += [f"the plugin's {key} CPUs are not empty: {state[key]}"
              for key in ("exclusive", "pinned") if state.get(key)]
    if state.get("draining"):
        found.append(f"CPUs still draining: {state['draining']}")
    if state.get("shared_pool") != pool.format():
        found.append(f"the plugin's shared pool is {state.get('shared_pool')!r}, expected "
                     f"{pool.format()!r}")
    return found
