"""Whether a container that has not been seen to start still holds its CPUs.

A container is placed at its creation, before it runs: the runtime creates its task (and so its
cgroup) only when it is started. When that never happens, the CPUs it was given must not stay
taken. The runtime sends no event for the commonest case: a start whose task cannot be created
(a missing binary, a bad mount, a wrong user) leaves the container *exited*, without a cgroup,
until someone removes it — and a kubelet keeps the last dead instance of each container and
creates the next attempt beside it. A container may also be created and never started (its pod
deleted between the two calls, a start that timed out).

The rule, for a container not seen to start, from what the runtime and the kernel report
(:class:`StartReport`):

1. the kernel shows tasks in its cgroup → it keeps its CPUs, whatever the runtime says: its
   task is being created (runc's init waits in the cgroup until the start) or it runs, and
   either way processes sit on those CPUs; only the runtime's word ends the wait (rule 2);
2. the runtime reports it running → it runs;
3. the runtime reports it exited → it holds nothing: its start failed (``start-failed``);
4. the runtime reports its state unknown → it holds nothing (``state-unknown``): no task runs
   in it (rule 1), and it is not waiting to start;
5. the runtime reports it created:
   * less than ``grace`` seconds ago → it keeps its CPUs (slow to start is not dead);
   * ``grace`` seconds ago or more → it holds nothing (``not-started``); should it start
     later, its start is refused (:class:`~cpuset_core.errors.StartTooLateError`);
6. the runtime does not list it → it keeps its CPUs: it is being created (a runtime lists a
   container only once its creation hook has answered) or being removed (whose own event
   releases it).

Pure: an adapter reads the runtime and the kernel and measures ages; the service releases.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final


class RuntimeState(enum.Enum):
    """A container's state as the runtime reports it (CRI's ``ContainerState``)."""

    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class StartReport:
    """What the runtime and the kernel say of one container not seen to start."""

    state: RuntimeState | None
    """``None``: the runtime does not list the container."""
    age: float = 0.0
    """Seconds since the runtime created it."""
    has_tasks: bool = False
    """The kernel shows processes in its cgroup (its task exists: being created, or run)."""
    detail: str = ""
    """The runtime's own words on it (e.g. ``StartError: ... no such file or directory``)."""


class StartOutcome(enum.Enum):
    """What a container not seen to start is, after :func:`judge_start`."""

    WAITING = "waiting"
    """Not started yet (within its grace, or its task is being created): it keeps its
    CPUs."""
    RUNNING = "running"
    """It runs: the event that would have said so was missed."""
    HOLDS_NOTHING = "holds-nothing"
    """It does not run and will not: what it holds goes back."""


NOT_RUNNING_REASONS: Final = ("start-failed", "state-unknown", "not-started")
"""Every :attr:`StartVerdict.reason` of :attr:`StartOutcome.HOLDS_NOTHING`, for metrics."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StartVerdict:
    """The rule's answer: the outcome, its stable reason (one of :data:`NOT_RUNNING_REASONS`
    for ``HOLDS_NOTHING``, else ``""``) and a sentence for people."""

    outcome: StartOutcome
    reason: str = ""
    why: str = ""


_WAITING = StartVerdict(outcome=StartOutcome.WAITING)
_RUNNING = StartVerdict(outcome=StartOutcome.RUNNING)


def judge_start(report: StartReport, *, grace: float) -> StartVerdict:
    """Apply the module's rule to ``report``; ``grace`` is in seconds."""
    if report.state is RuntimeState.RUNNING:
        return _RUNNING
    if report.has_tasks:
        return _WAITING
    said = f" ({report.detail})" if report.detail else ""
    if report.state is RuntimeState.EXITED:
        return StartVerdict(outcome=StartOutcome.HOLDS_NOTHING, reason="start-failed",
                            why=f"exited without running: its start failed{said}")
    if report.state is RuntimeState.UNKNOWN:
        return StartVerdict(outcome=StartOutcome.HOLDS_NOTHING, reason="state-unknown",
                            why=f"the runtime reports its state unknown and no task runs in "
                                f"it{said}")
    if report.state is RuntimeState.CREATED and report.age >= grace:
        return StartVerdict(outcome=StartOutcome.HOLDS_NOTHING, reason="not-started",
                            why=f"created {report.age:.0f} s ago and not started within the "
                                f"{grace:g} s grace")
    return _WAITING
