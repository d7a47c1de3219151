"""Quiet CPUs (issue 43): what a container asks of the node for its exclusive CPUs.

Three requests, read per container in this project's words (toggles, :mod:`cpuset_core.workload`)
and in CRI-O's (its high-performance hooks' pod annotations), so that a pod written for CRI-O
works unchanged; this project's key wins where both are set:

* interrupts off its CPUs — ``quiet-irqs.nri-cpuset.io/{pod,container.NAME}: "true"``, or
  ``irq-load-balancing.crio.io: "disable"`` (``"true"``, CRI-O's older spelling, too;
  ``"enable"`` asks nothing);
* idle states whose exit latency is above a bound disabled on its CPUs —
  ``quiet-idle.nri-cpuset.io/…: "true"`` (bound 0 µs: only polling is left, as CRI-O's
  ``"disable"``), or ``cpu-c-states.crio.io: "enable" | "disable" | "max_latency:<µs>"``;
* a frequency governor on its CPUs — ``cpu-freq-governor.crio.io: "<governor>"``.

A value outside those is refused (:class:`AnnotationValueError`). These take something from the
node (its interrupts go elsewhere, its power), so asking is gated like a pin
(``pinning.namespaces``). Only CPUs a container holds alone or with other pins are quieted: an
integer container's (a mixed one's exclusive part) and a pin's; any other container's request
is ignored, saying why. What must be quiet follows from the ledger (:mod:`cpuset_core.quiet`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from cpuset_core.errors import AnnotationValueError, PinNotAllowedError
from cpuset_core.model import ContainerFacts, Kind, PodFacts, subject_of
from cpuset_core.settings import Settings
from cpuset_core.workload import QUIET_IDLE, QUIET_IRQS

CRIO_IRQ: Final = "irq-load-balancing.crio.io"
CRIO_IDLE: Final = "cpu-c-states.crio.io"
CRIO_GOVERNOR: Final = "cpu-freq-governor.crio.io"
CRIO_KEYS: Final = (CRIO_IRQ, CRIO_IDLE, CRIO_GOVERNOR)

IRQ_VALUES: Final = ("disable", "true", "enable")
"""``true`` is CRI-O's deprecated spelling of ``disable``; both turn balancing off."""
IDLE_VALUES: Final = ("enable", "disable", "max_latency:<µs>")
GOVERNOR_VALUES: Final = ("a governor's name: a lower-case letter, then letters, digits, _",)
_LATENCY = re.compile(r"max_latency:([0-9]{1,9})")
# The kernel's governor names (CPUFREQ_NAME_LEN is 16 with the NUL).
_GOVERNOR = re.compile(r"[a-z][a-z0-9_]{0,14}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Quiet:
    """One container's quiet-CPU requests, and the annotations that made them."""

    irqs: bool = False
    """Interrupts off its CPUs (and off them for new interrupts)."""
    idle_limit: int | None = None
    """Idle states with an exit latency above this many µs disabled; ``None``: untouched."""
    governor: str | None = None
    keys: tuple[str, ...] = ()

    @property
    def wanted(self) -> bool:
        return self.irqs or self.idle_limit is not None or self.governor is not None

    def describe(self) -> str:
        """What it asks, in words (``interrupts off, idle states over 0 µs off``)."""
        parts = (["interrupts off"] if self.irqs else []) + (
            [f"idle states over {self.idle_limit} µs off"] if self.idle_limit is not None
            else []) + ([f"governor {self.governor}"] if self.governor else [])
        return ", ".join(parts) or "nothing"


def quiet_of(annotations: Mapping[str, str], container: str, subject: str) -> Quiet | None:
    """``container``'s requests; ``None`` when it asks for nothing. Raises
    :class:`AnnotationValueError` naming a key whose value is not understood, whichever
    vocabulary wins (a malformed annotation is refused wherever it is)."""
    irqs, irq_key = _irqs(annotations, container, subject)
    limit, idle_key = _idle(annotations, container, subject)
    governor = annotations.get(CRIO_GOVERNOR)
    if governor is not None and not _GOVERNOR.fullmatch(governor):
        raise AnnotationValueError(subject, CRIO_GOVERNOR, governor, GOVERNOR_VALUES)
    keys = tuple(key for key, on in ((irq_key, irqs), (idle_key, limit is not None),
                                     (CRIO_GOVERNOR, governor is not None)) if on)
    quiet = Quiet(irqs=irqs, idle_limit=limit, governor=governor, keys=keys)
    return quiet if quiet.wanted else None


def _irqs(annotations: Mapping[str, str], container: str, subject: str) -> tuple[bool, str]:
    crio = annotations.get(CRIO_IRQ)
    if crio is not None and crio not in IRQ_VALUES:
        raise AnnotationValueError(subject, CRIO_IRQ, crio, IRQ_VALUES)
    own = QUIET_IRQS.resolve(annotations, container, subject)
    if own is not None:
        return own
    return crio in ("disable", "true"), CRIO_IRQ


def _idle(annotations: Mapping[str, str], container: str,
          subject: str) -> tuple[int | None, str]:
    crio = annotations.get(CRIO_IDLE)
    limit: int | None = None
    if crio is not None:
        matched = _LATENCY.fullmatch(crio)
        if crio not in ("enable", "disable") and matched is None:
            raise AnnotationValueError(subject, CRIO_IDLE, crio, IDLE_VALUES)
        limit = int(matched.group(1)) if matched else (0 if crio == "disable" else None)
    own = QUIET_IDLE.resolve(annotations, container, subject)
    if own is not None:
        return (0 if own[0] else None), own[1]
    return limit, CRIO_IDLE


def quiet_decision(pod: PodFacts | None, container: ContainerFacts, settings: Settings,
                   kind: Kind) -> tuple[Quiet | None, str]:
    """The request a container of ``kind`` keeps, and what its reason says of it ("" when it
    asked nothing). Raises :class:`AnnotationValueError` for a value not understood and
    :class:`PinNotAllowedError` when its namespace may not pin: interrupts and power are the
    node's, taken like a pin's CPUs."""
    if pod is None:
        return None, ""
    subject = subject_of(pod, container)
    quiet = quiet_of(pod.annotations, container.name, subject)
    if quiet is None:
        return None, ""
    if not settings.may_pin(pod.namespace):
        raise PinNotAllowedError(subject, quiet.keys[0], pod.namespace,
                                 settings.pin_namespaces)
    if kind is Kind.SHARED:
        return None, f"quiet CPUs ignored ({', '.join(quiet.keys)}): no exclusive CPUs"
    return quiet, f"quiet CPUs: {quiet.describe()} by {', '.join(quiet.keys)}"
