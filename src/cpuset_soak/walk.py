"""The seeded random walk: which operations and faults come next, weighted like a busy node
(creations and deletions most, resizes, stops and out-of-band writes less, faults and
containers that never run — a start that fails, a container never started — now and then),
bounded by the node's capacity: what the model says fits is asked most of the time, and what
does not fit, bad annotations and pins on offline CPUs now and then, on purpose. The next
attempts of failing pods and the fates of created containers are scheduled in steps
(``retries``).
With CPU hotplug (``hotplug``: the CPUs it may take offline), a step now and then starts by
taking one offline, when the model knows the outcome; it comes back one to three steps on."""

from __future__ import annotations

import random
from typing import Final

from cpuset_core.cpuset import EMPTY, CPUSet

from . import quiet, requests
from .history import Op
from .model import BEST_EFFORT, EXCLUSIVE, INTEGER, MIXED, PINNED, RESERVED, SHARED, Node
from .retries import NeverRun

MAX_PODS: Final = 10
WEIGHTS: Final = {
    "create-shared": 22, "create-besteffort": 6, "create-integer": 12, "create-pinned": 10,
    "create-bad-pin": 4, "create-with-init": 4, "create-with-sidecar": 4,
    "delete": 22, "stop": 5, "resize": 6, "cri-cpuset": 4, "oob-write": 4,
    "burst": 4, "plugin-kill": 2, "plugin-kill-mid-burst": 1.5, "plugin-sigstop": 1.5,
    "containerd-restart": 1, "runc-refuse": 2.5, "narrow-pins": 1, "status-hammer": 2,
    "create-failing": 2.5, "create-unstarted": 2.5,
    "create-opted-out": 4, "create-mixed": 6, "create-system": 5, "create-reserved-request": 3,
    "create-isolated-request": 3, "create-quiet-request": 5,
}
"""Relative weights; a kind that cannot be done now (nothing to delete) is skipped."""
BAD_PINS: Final = ("0,,1", "x", "3-1", "0-", "64", "4095", "1,99")
NAMESPACES: Final = ("default", "storage")
HOTPLUG_CHANCE: Final = 0.3
"""Of a step starting with a CPU going offline (with ``hotplug``; a separate draw, so a walk
without hotplug draws exactly what it drew before)."""
MAX_OFFLINE: Final = 2


class Walk:
    """Draws steps from ``seed``; the model (kept by the runner) bounds them."""

    def __init__(self, seed: int, node: Node, hotplug: CPUSet = EMPTY,
                 without: frozenset[str] = frozenset()) -> None:
        self.rng = random.Random(seed)  # noqa: S311 - a seeded walk: reproducible, not secret
        self.node = node
        self.hotplug = hotplug
        self.kinds = [kind for kind in WEIGHTS if kind not in without]
        """The kinds drawn (``without`` some: an emulated guest skips the slow restarts)."""
        self.machine = node.online
        """Every CPU the walk may name in a pin (online or not)."""
        self.offline_for: dict[int, int] = {}
        """CPU → steps left before it comes back online."""
        self.pods_made = 0
        self.refusing: dict[str, int] = {}
        """pod/container → steps left while its runc refuses updates."""
        self.never_run = NeverRun()

    def step(self) -> list[Op]:
        ops: list[Op] = []
        for key in list(self.refusing):  # faults end by themselves, a few steps on
            self.refusing[key] -= 1
            if self.refusing[key] <= 0:
                del self.refusing[key]
                pod, name = key.split("/")
                ops.append({"kind": "runc-allow", "pod": pod, "container": name})
        ops += self.never_run.due(self.node)
        if self.hotplug and not self.never_run.waiting:
            ops += self._hotplug()
        for _ in range(self.rng.choice((1, 1, 2, 3, 4))):
            op = self._one()
            if isinstance(op, list):
                ops.extend(op)
            elif op is not None:
                ops.append(op)
        return ops

    def _one(self) -> Op | list[Op] | None:
        kind = self.rng.choices(self.kinds, weights=[WEIGHTS[k] for k in self.kinds])[0]
        return getattr(self, "_" + kind.replace("-", "_"))()  # type: ignore[no-any-return]

    # -- helpers ------------------------------------------------------------------------------

    def _pod_name(self) -> str | None:
        if len(self.node.pods) >= MAX_PODS:
            return None
        self.pods_made += 1
        return f"p{self.pods_made}"

    def _fitting_integer(self) -> int:
        """Exclusive CPUs to ask: what fits mostly, one more than fits now and then."""
        free = self.node.free_count(self.node.pins(), self.node.exclusive_count())
        if self.node.shared_count():
            free = min(free, self.node.pool_count(self.node.pins(),
                                                  self.node.exclusive_count()) - 1)
        draw = self.rng.random()
        if free >= 1 and draw < 0.6:
            return self.rng.randint(1, free)
        if free >= 1 and draw < 0.85:
            return free  # the boundary: exactly what fits
        return max(1, free + 1)

    def _handler(self) -> str:
        return "runc-faulty" if self.rng.random() < 0.3 else ""

    def _create(self, kind: str, **extra: object) -> Op | None:
        pod = self._pod_name()
        if pod is None:
            return None
        return {"kind": "create", "pod": pod, "type": kind, "handler": self._handler(),
                "namespace": "default", **extra}

    def _running(self, *kinds: str) -> list[tuple[str, str]]:
        return sorted((c.pod, c.name) for c in self.node.running() if c.kind in kinds
                      and not c.unmanaged)

    # -- the kinds ----------------------------------------------------------------------------

    def _create_shared(self) -> Op | None:
        return self._create(SHARED) if self._pool_or_sometimes() else self._delete()

    def _create_besteffort(self) -> Op | None:
        return self._create(BEST_EFFORT) if self._pool_or_sometimes() else self._delete()

    def _pool_or_sometimes(self) -> bool:
        """A shared pod on a node with no shared CPU left now and then (it must be refused);
        mostly, make room first."""
        return self.node.predict_shared().may_admit or self.rng.random() < 0.3

    def _create_integer(self) -> Op | None:
        return self._create(INTEGER, cpus=self._fitting_integer())

    def _pin(self) -> CPUSet:
        online = sorted(self.machine)  # an offline CPU now and then, with hotplug
        first = self.rng.choice(online)
        last = self.rng.choice([c for c in online if c >= first])
        return CPUSet.range(first, last) if self.rng.random() < 0.8 else CPUSet([first])

    def _create_pinned(self) -> Op | None:
        return self._create(PINNED, pins=self._pin().format(),
                            namespace=self.rng.choice(NAMESPACES))

    def _never_running(self, kind_of_op: str) -> Op | None:
        """A pod whose one container will not run: Guaranteed mostly, pinned or shared, asking
        what mostly fits (a pin on one online CPU, from the namespace every allowlist keeps:
        what it is there for is what follows its admission)."""
        kind = self.rng.choice((INTEGER, INTEGER, PINNED, SHARED))
        pod = self._pod_name()
        if pod is None:
            return None
        op: Op = {"kind": kind_of_op, "pod": pod, "type": kind, "namespace": "default"}
        if kind == INTEGER:
            op["cpus"] = self._fitting_integer()
        elif kind == PINNED:
            op.update(pins=str(self.rng.choice(sorted(self.node.online))), namespace="storage")
        return op

    def _create_failing(self) -> Op | None:
        op = self._never_running("create-failing")
        if op is not None:
            self.never_run.failed(op)
        return op

    def _create_unstarted(self) -> Op | None:
        op = self._never_running("create-unstarted")
        if op is not None:
            self.never_run.created(op, self.rng)
        return op

    # -- workload requests (``requests``) ------------------------------------------------------

    def _request(self, shape: str, cpus: int, namespace: str = "default") -> Op | None:
        return self._create(shape, cpus=cpus, namespace=namespace,
                            annotations=requests.annotations_of(
                                shape, per_container=self.rng.random() < 0.5))

    def _gated_namespace(self) -> str:
        """Where a request for CPUs taken from others comes from: a namespace that may pin,
        or now and then one that may not (it must be refused)."""
        if not self.node.allowed("default") and self.rng.random() < 0.3:
            return "default"
        return "storage"

    def _create_opted_out(self) -> Op | None:
        if not self._pool_or_sometimes():
            return self._delete()
        return self._request(requests.OPTED_OUT, self.rng.randint(1, 2))

    def _create_mixed(self) -> Op | None:
        """Whole CPUs that mostly fit beside a pool of one CPU at least, one more now and
        then."""
        pins, exclusive = self.node.pins(), self.node.exclusive_count()
        free = min(self.node.free_count(pins, exclusive),
                   self.node.pool_count(pins, exclusive) - 1)
        cpus = self.rng.randint(1, free) if free >= 1 and self.rng.random() < 0.8 else free + 1
        return self._request(requests.MIXED_REQUEST, max(1, cpus))

    def _create_system(self) -> Op | None:
        cpus = self.rng.choice((0, 0, 1))
        if cpus and not self.node.reserved_pool():
            cpus = self._fitting_integer()
        return self._request(requests.SYSTEM, cpus, namespace=requests.SYSTEM_NAMESPACE)

    def _create_reserved_request(self) -> Op | None:
        return self._request(requests.RESERVED_REQUEST, 0, self._gated_namespace())

    def _create_isolated_request(self) -> Op | None:
        return self._request(requests.ISOLATED_REQUEST, self._fitting_integer(),
                             self._gated_namespace())

    def _create_quiet_request(self) -> Op | None:
        """Quiet CPUs for whole CPUs that mostly fit, a Burstable pod's now and then (shared:
        ignored). Never on runc-faulty: a refused move would part the CPUs the plugin quiets
        (its ledger's) from the kernel's."""
        cpus = self._fitting_integer() if self.rng.random() < 0.85 else 0
        op = self._create(requests.QUIET_REQUEST, cpus=cpus, namespace=self._gated_namespace(),
                          annotations=quiet.draw(self.rng))
        return None if op is None else {**op, "handler": ""}

    def _create_bad_pin(self) -> Op | None:
        return self._create(PINNED, pins=self.rng.choice(BAD_PINS),
                            namespace=self.rng.choice(NAMESPACES))

    def _create_with_init(self) -> Op | None:
        return self._create(INTEGER, cpus=1, init=True)

    def _create_with_sidecar(self) -> Op | None:
        kind = INTEGER if self.rng.random() < 0.5 else SHARED
        return self._create(kind, cpus=1, sidecar=True)

    def _delete(self) -> Op | None:
        if not self.node.pods:
            return None
        return {"kind": "delete", "pod": self.rng.choice(sorted(self.node.pods))}

    def _stop(self) -> Op | None:
        choices = self._running(SHARED, BEST_EFFORT, INTEGER, PINNED, MIXED, RESERVED)
        if not choices:
            return None
        pod, name = self.rng.choice(choices)
        return {"kind": "stop", "pod": pod, "container": name}

    def _resize(self) -> Op | None:
        choices = self._running(INTEGER)
        if not choices:
            return None
        pod, name = self.rng.choice(choices)
        current = self.node.pods[pod].containers[name].cpus
        grow = self._fitting_integer()
        cpus = self.rng.choice([max(1, current - 1), current + grow])
        return {"kind": "resize", "pod": pod, "container": name, "cpus": cpus}

    def _cri_cpuset(self) -> Op | None:
        choices = self._running(SHARED, BEST_EFFORT)
        if not choices:
            return None
        pod, name = self.rng.choice(choices)
        return {"kind": "cri-cpuset", "pod": pod, "container": name,
                "cpus": str(self.rng.choice(sorted(self.node.online)))}

    def _oob_write(self) -> Op | None:
        choices = self._running(SHARED, BEST_EFFORT, INTEGER, PINNED, MIXED, RESERVED)
        if not choices:
            return None
        pod, name = self.rng.choice(choices)
        return {"kind": "oob-write", "pod": pod, "container": name,
                "cpus": self.node.online.format()
                if self.node.pods[pod].containers[name].kind == INTEGER
                else str(self.rng.choice(sorted(self.node.online)))}

    def _burst(self) -> Op | None:
        pods = self._burst_pods()
        op: Op = {"kind": "burst", "pods": pods, "kill_at": -1}
        # A pin mid-burst, when its outcome does not depend on the burst's order: shared
        # containers already run and no integer container would have to move.
        if (pods and self.node.shared_count() and not self.node.of_kind(*EXCLUSIVE)
                and self.rng.random() < 0.5):
            op.update(pin=str(self.node.online.last()), pin_at=self.rng.randrange(len(pods)))
        return op

    def _burst_pods(self) -> list[str]:
        names = [self._pod_name() for _ in range(self.rng.randint(3, 6))]
        return [n for n in names if n is not None]

    # A created container waiting for its fate sees no restart of the plugin or the runtime,
    # nor a stop: a restarted plugin forgets which containers it gave up (a late start just
    # after would run), a stopped one gives nothing back while it is stopped.

    def _plugin_kill(self) -> Op | None:
        return None if self.never_run.waiting else {"kind": "plugin-kill"}

    def _plugin_kill_mid_burst(self) -> Op | None:
        if self.never_run.waiting:
            return None
        pods = self._burst_pods()
        return {"kind": "burst", "pods": pods, "kill_at": self.rng.randint(0, len(pods))}

    def _plugin_sigstop(self) -> Op | None:
        if self.never_run.waiting:
            return None
        return {"kind": "plugin-sigstop", "pod": self._pod_name()}

    def _containerd_restart(self) -> Op | None:
        return None if self.never_run.waiting else {"kind": "containerd-restart"}

    def _runc_refuse(self) -> list[Op] | None:
        """runc refuses a container's updates for a few steps; an integer container's is
        then asked to give CPUs up (a shrink, or a pin arriving on its CPUs and leaving),
        and another integer container asks for CPUs: the refused release must not be
        handed out while the kernel still shows the container there."""
        choices = [c for c in self.node.running()
                   if self.node.pods[c.pod].handler and not c.faulted and not c.unmanaged
                   and c.kind in (SHARED, BEST_EFFORT, INTEGER)]
        if not choices:
            return None
        chosen = self.rng.choice(sorted(choices, key=lambda c: (c.pod, c.name)))
        self.refusing[f"{chosen.pod}/{chosen.name}"] = self.rng.randint(1, 3)
        ops: list[Op] = [{"kind": "runc-refuse", "pod": chosen.pod, "container": chosen.name}]
        if chosen.kind != INTEGER or self.rng.random() < 0.3:
            return ops
        if chosen.cpus > 1:
            ops.append({"kind": "resize", "pod": chosen.pod, "container": chosen.name,
                        "cpus": chosen.cpus - 1})
        elif (pin := self._create(PINNED, pins=chosen.actual.format() or "0",
                                  namespace="storage")) is not None:
            ops += [pin, {"kind": "delete", "pod": pin["pod"]}]
        if (taker := self._create(INTEGER, cpus=1)) is not None:
            ops.append(taker)
        return ops

    def _hotplug(self) -> list[Op]:
        """CPUs whose time is up come back; then, now and then, one goes offline: not while
        a runtime refuses updates (where a refused move lands is not known) and only when the
        model knows the outcome (``Node.may_go_offline``)."""
        ops: list[Op] = []
        for cpu in sorted(self.offline_for):
            self.offline_for[cpu] -= 1
            if self.offline_for[cpu] <= 0:
                del self.offline_for[cpu]
                ops.append({"kind": "cpu-online", "cpu": cpu})
        if self.rng.random() >= HOTPLUG_CHANCE or self.refusing or ops:
            return ops
        choices = [cpu for cpu in self.hotplug if cpu not in self.offline_for
                   and self.node.may_go_offline(cpu)]
        if len(self.offline_for) >= MAX_OFFLINE or not choices:
            return ops
        cpu = self.rng.choice(choices)
        self.offline_for[cpu] = self.rng.randint(1, 3)
        return [{"kind": "cpu-offline", "cpu": cpu}]

    def _narrow_pins(self) -> Op | None:
        narrow = self.node.namespaces == ("*",)
        return {"kind": "pin-namespaces", "namespaces": ["storage"] if narrow else ["*"]}

    def _status_hammer(self) -> Op | None:
        return {"kind": "status-hammer", "seconds": self.rng.choice((2, 4))}
