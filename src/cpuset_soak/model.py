"""Who should own what: a small model of the node, kept by the soak from what it asked and what
the runtime answered, never from the plugin's own view, and the outcomes it allows.

The rules are the plugin's documented ones (README, docs/operations.md), written again here:
integer containers get N exclusive CPUs out of ``online − reserved − pins``; pinned pods get
exactly their annotation (its online part, while a CPU is offline); shared containers run on
``online − pins − exclusive`` (minus ``reserved`` with a strict reservation), which must not be
empty while one runs. A CPU a running container gave up may still be draining: the plugin
keeps it from exclusive owners until its verifier sees the container left it, and says so in
its state document (``inspect``'s ``draining``). CPUs given up since the node last settled,
and those the document listed as draining when it did, are such; a creation that fits only by
counting them may be refused or admitted.

Workload requests (docs/operations.md "Workload annotations", ``requests``): a mixed container
holds its whole CPUs exclusively and runs on the shared pool too (so the pool must not be empty
for it); a container on the reserved CPUs (kube-system while CPUs are reserved, or asking)
holds nothing and runs on ``reserved`` ∩ online; an integer container that declines exclusive
CPUs is a shared one.

A container placed and never run holds nothing once the plugin knows it will not run
(``cpuset_core.starts``): one whose start failed at once (the plugin asks the runtime before it
refuses anything for want of room), one created and not started within the plugin's
``runtime.start_grace`` (:class:`Grace`) from then on; until then a created container holds
what it was given (``lifetimes`` judges the time).
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from cpuset_core.cpuset import EMPTY, CPUSet

from .prediction import (
    ADMIT,
    INSUFFICIENT,
    INVALID_ANNOTATION,
    NAMESPACE,
    POOL_EMPTY,
    REASSIGNMENT,
    UNAVAILABLE,
    Prediction,
    maybe,
    refuse,
)

SHARED: Final = "shared"
BEST_EFFORT: Final = "besteffort"
INTEGER: Final = "integer"
PINNED: Final = "pinned"
MIXED: Final = "mixed"
"""Exclusive CPUs (``cpus``) and the shared pool beside them (``mixed-cpus``)."""
RESERVED: Final = "reserved"
"""On the reserved CPUs, holding nothing."""
EXCLUSIVE: Final = (INTEGER, MIXED)
"""The kinds that hold exclusive CPUs."""
ON_POOL: Final = (SHARED, BEST_EFFORT, MIXED)
"""The kinds that run on the shared pool (which must not be empty while one does)."""

RUNNING: Final = "running"
CREATED: Final = "created"
"""Created and not started yet: it holds what it was given within the start grace."""
FAILED: Final = "failed"
"""Its start failed (the runtime could not create its task): it holds nothing."""
EXPIRED: Final = "expired"
"""Created and not started within the grace (or its late start refused): it holds nothing."""
HOLDING: Final = (RUNNING, CREATED)

@dataclass(slots=True)
class Container:
    pod: str
    name: str
    kind: str
    """``shared``, ``besteffort``, ``integer``, ``pinned`` (any container of a pinned pod),
    ``mixed`` or ``reserved``."""
    cpus: int = 0
    """Exclusive CPUs asked (integer and mixed containers)."""
    mixed: bool = False
    """It asked for exclusive CPUs beside the pool: a rebuild that kept it shared (no pool left
    beside them) places it mixed again at its next update."""
    cid: str = ""
    state: str = RUNNING
    """``running``, ``stopped`` (stopped, not removed), ``exited`` (an init container),
    ``removed``, or one that never ran: ``created``, ``failed``, ``expired``."""
    unmanaged: bool = False
    """Created while the plugin was away: corrected by the next Synchronize, not before."""
    tampered: bool = False
    """Its cpuset was written behind the plugin's back (cgroupfs, CRI) since the node last
    settled: it may be anywhere until the plugin puts it back."""
    faulted: bool = False
    """Its pod's runc refuses its updates now: it may stay off its placement."""
    cgroups_path: str = ""
    pid: int = 0
    actual: CPUSet = EMPTY
    """Its CPUs in the kernel when last read (integer containers: where the plugin put it;
    mixed ones: the exclusive part, the CPUs the plugin's state document says it owns);
    one that never ran: what the plugin's state document said it was given."""
    created_at: float = 0.0
    """When its CreateContainer returned (``Node.clock``), for one created and not started."""


@dataclass(slots=True)
class Pod:
    name: str
    namespace: str
    qos: str
    annotation: str | None = None
    requests: dict[str, str] = field(default_factory=dict)
    """Its workload annotations (``requests``), beside the pin."""
    handler: str = ""
    pod_id: str = ""
    uid: str = ""
    pin: CPUSet | None = None
    """The CPUs its containers are pinned to, once admitted (None: not pinned)."""
    containers: dict[str, Container] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Grace:
    """The plugin's ``runtime.start_grace`` (``seconds``) as the soak may judge it: the plugin
    counts a container's age from the runtime's creation, up to ``margin`` earlier than the
    soak's, and its start watch gives the CPUs back within ``slack`` after the grace."""

    seconds: float = 120.0
    margin: float = 2.0
    slack: float = 3.0


@dataclass(slots=True)
class Node:
    online: CPUSet
    reserved: CPUSet = EMPTY
    strict_reservation: bool = False
    namespaces: tuple[str, ...] = ("*",)
    pods: dict[str, Pod] = field(default_factory=dict)
    grace: Grace = Grace()
    clock: Callable[[], float] = time.monotonic
    uncertain: int = 0
    """CPUs that may still be draining: given up since the node last settled, or listed as
    draining by the plugin's state document when it did."""

    # -- what runs --------------------------------------------------------------------------

    def running(self) -> list[Container]:
        return [c for p in self.pods.values() for c in p.containers.values()
                if c.state == RUNNING]

    def holding(self) -> list[Container]:
        """The containers that hold what they were given: running, or created and waiting
        for their start."""
        return [c for p in self.pods.values() for c in p.containers.values()
                if c.state in HOLDING]

    def created(self) -> list[Container]:
        return [c for c in self.holding() if c.state == CREATED]

    def of_kind(self, *kinds: str) -> list[Container]:
        """The holding containers of ``kinds``."""
        return [c for c in self.holding() if c.kind in kinds]

    def pins(self) -> CPUSet:
        """The online CPUs pinned by pods with a holding container (a pin keeps its online
        part while a CPU is offline, and takes the CPU back when it returns)."""
        return CPUSet.union_of(p.pin & self.online for p in self.pods.values()
                               if p.pin is not None
                               and any(c.state in HOLDING for c in p.containers.values()))

    def exclusive_count(self) -> int:
        return sum(c.cpus for c in self.of_kind(*EXCLUSIVE))

    def reserved_pool(self) -> CPUSet:
        """Where containers on the reserved CPUs run (the soak's machines isolate no CPU)."""
        return self.reserved & self.online

    def pool_count(self, pins: CPUSet, exclusive: int) -> int:
        base = self.online - pins
        if self.strict_reservation:
            base -= self.reserved
        return len(base) - exclusive

    def free_count(self, pins: CPUSet, exclusive: int) -> int:
        return len(self.online - pins - self.reserved) - exclusive

    def shared_count(self) -> int:
        """Containers the pool must keep a CPU for (running, or created): shared and mixed."""
        return len(self.of_kind(*ON_POOL))

    def allowed(self, namespace: str) -> bool:
        return any(fnmatch.fnmatchcase(namespace, pattern) for pattern in self.namespaces)

    # -- what the plugin may answer ---------------------------------------------------------

    def pin_refusals(self, pod: Pod) -> tuple[CPUSet | None, set[str]]:
        """The pod's pin and why it must be refused (empty: it may be pinned)."""
        reasons: set[str] = set()
        if not self.allowed(pod.namespace):
            reasons.add(NAMESPACE)
        try:
            wanted = CPUSet.parse(pod.annotation or "")
        except ValueError:
            return None, reasons | {INVALID_ANNOTATION}
        if not wanted.issubset(self.online):
            reasons.add(UNAVAILABLE)
        return wanted, reasons

    def predict_shared(self) -> Prediction:
        if self.pool_count(self.pins(), self.exclusive_count()) >= 1:
            return ADMIT
        return refuse(POOL_EMPTY)

    def predict_integer(self, grow: int, *, on_pool: bool = False) -> Prediction:
        """An integer container of ``grow`` CPUs arriving (or one growing by that many);
        ``on_pool``: a mixed one, which needs the pool beside its CPUs whoever else runs
        there."""
        pins, exclusive = self.pins(), self.exclusive_count()
        free = self.free_count(pins, exclusive)
        pool_after = self.pool_count(pins, exclusive + grow)
        # The CPUs are chosen first, the pool is checked on the result; a pool a synchronize
        # already left empty (shared containers created while the plugin was away, on a node
        # without one) refuses nothing more; a mixed one is refused whenever it would leave
        # itself no pool.
        if grow > free:
            return refuse(INSUFFICIENT)
        if pool_after < 1 and (on_pool or (
                self.pool_count(pins, exclusive) >= 1 and self.shared_count())):
            return refuse(POOL_EMPTY)
        return maybe(INSUFFICIENT) if grow > free - self.uncertain else ADMIT

    def predict_pinned(self, pod: Pod) -> Prediction:
        pin, reasons = self.pin_refusals(pod)
        if reasons or pin is None:
            return refuse(*reasons)
        pins = self.pins() | pin
        moved = [c for c in self.of_kind(*EXCLUSIVE) if not c.actual.isdisjoint(pin)]
        moving = sum(c.cpus for c in moved)
        staying = self.exclusive_count() - moving
        # The moves are planned first, the pool is checked on the result.
        if self.free_count(pins, staying) < moving:
            return refuse(REASSIGNMENT)
        if (self.pool_count(pins, staying + moving) < 1
                <= self.pool_count(self.pins(), self.exclusive_count())
                and self.shared_count()):
            return refuse(POOL_EMPTY)
        if moving and self.free_count(pins, staying) - self.uncertain < moving:
            return maybe(REASSIGNMENT)
        return ADMIT

    # -- what happened -----------------------------------------------------------------------

    def release(self, container: Container, state: str) -> None:
        """``container`` stopped, exited or went away: what it held may drain (what one that
        never ran held goes back at once)."""
        if container.state == RUNNING:
            pod = self.pods[container.pod]
            self.uncertain += container.cpus
            alone = all(c is container or c.state != RUNNING
                        for c in pod.containers.values())
            if pod.pin is not None and alone:
                self.uncertain += len(pod.pin)
        container.state = state

    def settled(self, draining: CPUSet = EMPTY) -> None:
        """The node settled; ``draining``: what the plugin's state document lists as draining
        now (kept from exclusive owners until its verifier's next pass shows it left, which
        the node's settling does not wait for)."""
        self.uncertain = len(draining - self.pins() - self.reserved)
        for container in self.running():
            container.unmanaged = container.tampered = False

    # -- CPU hotplug --------------------------------------------------------------------------

    def may_go_offline(self, cpu: int) -> bool:
        """Whether taking ``cpu`` offline now has the one outcome this model knows: it is not
        reserved, every running pin keeps an online CPU, the integer containers still fit
        (one that loses a CPU gets as many elsewhere) and a shared CPU is left."""
        if cpu not in self.online or cpu in self.reserved:
            return False
        after = Node(online=self.online - CPUSet([cpu]), reserved=self.reserved,
                     strict_reservation=self.strict_reservation, pods=self.pods)
        if len(after.online) < 2:
            return False
        for pod in self.pods.values():
            if (pod.pin is not None and not pod.pin & after.online
                    and any(c.state in HOLDING for c in pod.containers.values())):
                return False
        pins, exclusive = after.pins(), after.exclusive_count()
        return after.free_count(pins, exclusive) >= 0 and after.pool_count(pins, exclusive) >= 1

    def went_offline(self, cpu: int) -> None:
        """``cpu`` is offline: integer containers that held it move, and what they held may
        drain until the node settles. Until the plugin moves one, the kernel may run it
        anywhere (cgroup v2 gives a cpuset left without an online CPU its parent's), so it
        owns nothing until the node settles."""
        self.online -= CPUSet([cpu])
        for container in self.of_kind(*EXCLUSIVE):
            if cpu in container.actual:
                self.uncertain += container.cpus
                container.tampered = True

    def came_online(self, cpu: int) -> None:
        self.online |= CPUSet([cpu])
