"""What the walk schedules for containers that never run, counted in steps so that a walk stays
the same for a seed: each failing pod's next attempt after the kubelet's back-off
(``cpuset_lab.pod_worker.Backoff``, 10 s doubling to 5 min there; here one step doubling to
eight), until the pod is deleted; and the fate of each container created and not started —
started a step later (within the grace), started once the grace has passed (``late``), or its
pod deleted one to three steps later. While a created container waits for its fate the walk
draws no fault that restarts or stops the plugin or the runtime, nor a CPU going offline."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Final

from cpuset_lab.pod_worker import Backoff

from .history import Op
from .model import Node

STEP_BACKOFF: Final = Backoff(initial=1.0, cap=8.0)
"""The kubelet's back-off, in steps: 1, 2, 4, 8, 8, ... after each failed attempt."""


@dataclass(slots=True)
class Failing:
    """A failing pod as the walk drew it: its ``type`` (and ``cpus``), the steps left before
    its next attempt and how many attempts it has had."""

    type: str
    cpus: int = 0
    wait: int = 1
    attempts: int = 1


@dataclass(slots=True)
class NeverRun:
    """The walk's schedule of next attempts (``failing``) and created containers' fates
    (``pending``: pod → steps left and the operation)."""

    failing: dict[str, Failing] = field(default_factory=dict)
    pending: dict[str, tuple[int, Op]] = field(default_factory=dict)

    def failed(self, op: Op) -> None:
        """``op`` runs a failing pod and its first attempt."""
        self.failing[op["pod"]] = Failing(op["type"], int(op.get("cpus", 0)),
                                          wait=int(STEP_BACKOFF.after(1)))

    def created(self, op: Op, rng: random.Random) -> None:
        """``op`` creates a container and does not start it: draw its fate."""
        pod, draw = op["pod"], rng.random()
        if draw < 0.45:
            self.pending[pod] = (1, {"kind": "start-created", "pod": pod, "late": False})
        elif draw < 0.75:
            self.pending[pod] = (rng.randint(1, 2),
                                 {"kind": "start-created", "pod": pod, "late": True})
        else:
            self.pending[pod] = (rng.randint(1, 3), {"kind": "delete", "pod": pod})

    @property
    def waiting(self) -> bool:
        """Whether a created container waits for its fate (no restart fault meanwhile)."""
        return bool(self.pending)

    def due(self, node: Node) -> list[Op]:
        """The operations due at this step: next attempts, then fates."""
        ops: list[Op] = []
        for pod in sorted(self.failing):
            failing = self.failing[pod]
            if pod not in node.pods:
                del self.failing[pod]  # deleted
                continue
            failing.wait -= 1
            if failing.wait > 0:
                continue
            op: Op = {"kind": "retry-failing", "pod": pod, "type": failing.type,
                      "attempt": failing.attempts}
            if failing.cpus:
                op["cpus"] = failing.cpus
            ops.append(op)
            failing.attempts += 1
            failing.wait = int(STEP_BACKOFF.after(failing.attempts))
        for pod in sorted(self.pending):
            steps, op = self.pending[pod]
            if steps <= 1:
                ops.append(self.pending.pop(pod)[1])
            else:
                self.pending[pod] = (steps - 1, op)
        return ops
