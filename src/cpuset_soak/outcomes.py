"""Judging what the runtime answered to a creation or an update the plugin decides: a refusal
must carry the plugin's typed error, be one the model allows, and leave no container behind; a
container created must not be one the plugin refused; a start that fails because the command
does not exist must fail with the runtime's own error, never the plugin's."""

from __future__ import annotations

from typing import Final

from .model import Pod
from .parts import Kubelet, Plugin, Recorder
from .prediction import Prediction

PHRASES: Final = {
    "invalid-annotation": " is invalid: ",
    "pin-namespace-not-allowed": " may not use the annotation ",
    "cpu-unavailable": " that are not online ",
    "insufficient-cpus": " exclusive CPU(s) but only ",
    "insufficient-cpus-for-reassignment": "; moving them needs ",
    "shared-pool-exhausted": "shared CPU pool would be empty",
    "shared-pool-below-minimum": "below the configured minimum",
    "started-too-late": " start refused: created ",
}
"""Each typed refusal's wording in the runtime's error text (``cpuset_core.errors``)."""


def reason_of(details: str) -> str | None:
    """The typed refusal the runtime's error text carries (None: not the plugin's)."""
    if "nri-cpuset: " not in details:
        return None
    found = [reason for reason, phrase in PHRASES.items() if phrase in details]
    return found[0] if len(found) == 1 else None


TOO_LATE: Final = "started-too-late"
MISSING_COMMAND: Final = "/nonexistent"
"""The command of a container whose start must fail: the runtime's error names it."""
TASK_FAILED: Final = "failed to create containerd task"
"""How containerd (1.7 and 2.x) words a start whose task it could not create."""


def refused(pod: Pod, name: str, subject: str, prediction: Prediction, *,
            details: str, managed: bool, kubelet: Kubelet, plugin: Plugin,
            record: Recorder, kept: frozenset[str] = frozenset()) -> None:
    """The runtime refused ``subject`` (``pod``'s container ``name``; "" for an update) with
    ``details``; ``managed``: the plugin answered when it was asked; ``kept``: dead instances
    of ``name`` that are not the one refused."""
    reason = reason_of(details)
    allowed = ("must admit" if prediction.must_admit
               else f"{'may admit or ' if prediction.may_admit else 'must '}refuse "
                    f"{sorted(prediction.reasons)}")
    record.outcome(f"refused {subject}: {reason or 'not by the plugin'} (model: {allowed}): "
                   f"{details[-160:]}")
    if reason is not None:
        record.refusal(reason)
    if managed and plugin.up:
        if reason is None:
            record.violation(f"{subject} failed without a typed refusal of the plugin: "
                             f"{details}")
        elif not prediction.allows(reason):
            expected = ("admission" if prediction.must_admit
                        else f"one of {sorted(prediction.reasons)}")
            record.violation(f"{subject} refused with {reason}, the model expects {expected}: "
                             f"{details}")
    left = [c for c in kubelet.list_containers(pod.pod_id) if c.name == name
            and c.id not in kept]
    if left and reason is not None:
        record.violation(f"{subject} was refused ({reason}) but exists: {left}")


def refused_yet_exists(subject: str, cid: str, *, plugin: Plugin, record: Recorder) -> None:
    """The runtime created the container: the plugin must not have refused it (its log's
    ``reject`` events name what it refused, whatever it answered)."""
    if plugin.refused(cid):
        record.violation(f"{subject} exists as {cid[:12]}, but the plugin refused it (a "
                         f"'reject' for {cid[:12]} in its log)")


def failed_as_the_runtime_says(subject: str, details: str | None, *, record: Recorder) -> bool:
    """The start of ``subject``, whose command does not exist, failed with ``details`` (None:
    it did not fail): it must fail, with the runtime's own error naming the command — never
    with a refusal of the plugin (a capacity refusal there is what a CPU held by a dead
    instance looks like to the user). Whether it did."""
    if details is None:
        record.violation(f"{subject} started, but its command {MISSING_COMMAND} does not exist")
        return False
    if "nri-cpuset" in details:
        record.violation(f"{subject} failed to start with the plugin's refusal "
                         f"({reason_of(details) or 'untyped'}), not the runtime's own error: "
                         f"{details}")
        return False
    if TASK_FAILED not in details or MISSING_COMMAND not in details:
        record.violation(f"{subject} failed to start without the runtime's own error "
                         f"('{TASK_FAILED}: ... {MISSING_COMMAND} ...'): {details}")
        return False
    record.outcome(f"{subject} failed to start, as the runtime says: {details[-120:]}")
    return True
