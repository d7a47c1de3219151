"""CPUs a pod's completed containers left behind, so its next integer container can land there.

NRI does not say which container is an init container, a sidecar or an app container (fact
sheet §5.3: no such field; the kubelet's labels and annotations carry none either). What the
runtime does show is the order of events within a pod: init containers run to completion, and
containerd sends StopContainer when a container exits on its own, before the kubelet creates
the next container of the pod. So the rule needs no flag:

* an integer container's CPUs are released when it stops (as for every container) and
  remembered under its pod;
* the pod's next integer container prefers those CPUs when they are still free and hold its
  request, so an app container lands where its init container warmed caches and memory;
* a container that is still running (a sidecar, i.e. a restartable init container) was never
  stopped, so its CPUs are never remembered as left behind: they stay its own.

The memory is a preference, never a reservation: a remembered CPU that anyone takes is
dropped. It is bounded (:data:`MAX_PODS`, oldest first) and cleared when the pod goes away.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.ledger import Ledger
from cpuset_core.model import Kind
from cpuset_core.policy.exclusive import (
    DEFAULT_OPTIONS,
    AllocationOptions,
    Choice,
    ExclusiveAllocator,
    WholeCoresUnavailableError,
)

MAX_PODS = 256
"""Pods remembered at most: a pod whose removal the plugin never saw (it was down) must not
make the memory grow forever. The oldest pod is forgotten first."""

_NOTHING: Mapping[str, CPUSet] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class LeftBehind:
    """Per pod sandbox id: the CPUs its stopped integer containers held that nobody has taken
    since. Immutable; every change returns a new value."""

    by_pod: Mapping[str, CPUSet] = field(default_factory=lambda: _NOTHING)

    def of(self, sandbox_id: str) -> CPUSet:
        """The CPUs ``sandbox_id``'s completed containers left (empty when none)."""
        return self.by_pod.get(sandbox_id, EMPTY)

    def after(self, base: Ledger, result: Ledger) -> LeftBehind:
        """The memory once ``result`` replaces ``base``: integer containers that left the
        ledger add their CPUs to their pod; CPUs someone holds in ``result`` are dropped."""
        if base is result:
            return self
        # Cheap tests first: most commits admit a container and free no exclusive CPU.
        freed = base.exclusive - result.reserved
        taken = result.reserved - base.reserved
        if not freed and (not taken or not self.by_pod):
            return self
        left: dict[str, CPUSet] = {}
        if freed:
            # Sorted: set order varies between processes, and eviction order must not.
            for cid in sorted(base.entries.keys() - result.entries.keys()):
                entry = base.entries[cid]
                if entry.kind is Kind.INTEGER:
                    left[entry.sandbox_id] = left.get(entry.sandbox_id, EMPTY) | entry.cpus
        merged: dict[str, CPUSet] = {}
        for pod, cpus in self.by_pod.items():
            if pod not in left and (kept := cpus - taken):
                merged[pod] = kept
        for pod, cpus in left.items():
            # Re-inserted last: a pod that just released CPUs is the newest, evicted last.
            if kept := (self.of(pod) | cpus) - result.reserved:
                merged[pod] = kept
        while len(merged) > MAX_PODS:
            del merged[next(iter(merged))]
        return LeftBehind(MappingProxyType(merged))

    def without_pod(self, sandbox_id: str) -> LeftBehind:
        """The memory without ``sandbox_id`` (the pod is gone)."""
        if sandbox_id not in self.by_pod:
            return self
        return LeftBehind(MappingProxyType({pod: cpus for pod, cpus in self.by_pod.items()
                                            if pod != sandbox_id}))


def reuse_choice(warm: CPUSet, request: int, *, free: CPUSet, exclusive: CPUSet,
                 allocator: ExclusiveAllocator,
                 options: AllocationOptions = DEFAULT_OPTIONS) -> Choice | None:
    """The best-shaped ``request`` CPUs among ``warm`` (a pod's left-behind CPUs) that are
    ``free``, under the operator's allocation ``options``; ``None`` when they do not hold the
    request (with ``full_physical_cores``: in whole cores). The allocator's own rules then
    decide, and may refuse."""
    warm &= free
    if not warm or len(warm) < request:
        return None
    try:
        return allocator.choose(warm, request, exclusive=exclusive, options=options)
    except WholeCoresUnavailableError:
        return None
