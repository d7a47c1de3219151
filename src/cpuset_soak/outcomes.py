"""Judging what the runtime answered to a creation or an update the plugin decides: a refusal
must carry the plugin's typed error, be one the model allows, and leave no container behind; a
container created must not be one the plugin refused."""

from __future__ import annotations

from typing import Final

from .model import Pod, Prediction
from .parts import Kubelet, Plugin, Recorder

PHRASES: Final = {
    "invalid-annotation": " is invalid: ",
    "pin-namespace-not-allowed": " may not use the annotation ",
    "cpu-unavailable": " that are not online ",
    "insufficient-cpus": " exclusive CPU(s) but only ",
    "insufficient-cpus-for-reassignment": "; moving them needs ",
    "shared-pool-exhausted": "shared CPU pool would be empty",
    "shared-pool-below-minimum": "below the configured minimum",
}
"""Each typed refusal's wording in the runtime's error text (``cpuset_core.errors``)."""


def reason_of(details: str) -> str | None:
    """The typed refusal the runtime's error text carries (None: not the plugin's)."""
    if "nri-cpuset: " not in details:
        return None
    found = [reason for reason, phrase in PHRASES.items() if phrase in details]
    return found[0] if len(found) == 1 else None


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
