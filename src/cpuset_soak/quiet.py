"""Quiet-CPU requests as the soak walks them (docs/operations.md "Quiet CPUs", decision 55): the
annotations a ``quiet-request`` pod carries, in this project's words and CRI-O's, and what the
model says they ask — the plugin's documented rules, written again here:

* this project's toggles (``quiet-irqs.nri-cpuset.io/…``, ``quiet-idle.nri-cpuset.io/…``, per
  pod or for the ``app`` container) win over CRI-O's keys; ``"true"`` asks, ``"false"`` asks
  nothing even where CRI-O's key asks;
* ``irq-load-balancing.crio.io``: ``"disable"`` or ``"true"`` ask for interrupts off;
* ``cpu-c-states.crio.io``: ``"disable"`` is a bound of 0 µs, ``"max_latency:N"`` N µs,
  ``"enable"`` nothing; this project's ``quiet-idle`` is a bound of 0 µs;
* a value outside those is refused (``invalid-annotation``), before anything else; asking
  from a namespace that may not pin is refused like a pin;
* only an integer container's CPUs are quieted (a Burstable pod asking is shared: ignored).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from .prediction import INVALID_ANNOTATION

OURS_IRQS: Final = "quiet-irqs.nri-cpuset.io"
OURS_IDLE: Final = "quiet-idle.nri-cpuset.io"
CRIO_IRQ: Final = "irq-load-balancing.crio.io"
CRIO_IDLE: Final = "cpu-c-states.crio.io"

VARIANTS: Final[tuple[Mapping[str, str], ...]] = (
    {CRIO_IRQ: "disable", CRIO_IDLE: "disable"},
    {CRIO_IRQ: "disable"},
    {CRIO_IRQ: "true", CRIO_IDLE: "max_latency:0"},
    {CRIO_IDLE: "disable"},
    {CRIO_IRQ: "enable", CRIO_IDLE: "max_latency:1000"},
    {f"{OURS_IRQS}/pod": "true", f"{OURS_IDLE}/pod": "true"},
    {f"{OURS_IRQS}/container.app": "true"},
    {f"{OURS_IDLE}/container.app": "true", CRIO_IRQ: "disable"},
    {f"{OURS_IRQS}/pod": "false", CRIO_IRQ: "disable", CRIO_IDLE: "disable"},
)
"""What a valid quiet request looks like, in both vocabularies (the last: ours says no)."""
REFUSED: Final[tuple[Mapping[str, str], ...]] = (
    {CRIO_IDLE: "off"}, {CRIO_IRQ: "maybe", CRIO_IDLE: "disable"},
    {CRIO_IDLE: "max_latency:-1"},
)
"""Values the plugin does not understand: refused."""
_LATENCY = re.compile(r"max_latency:([0-9]{1,9})")


@dataclass(frozen=True, slots=True)
class Asked:
    """What a pod's annotations ask of its ``app`` container's CPUs."""

    irqs: bool = False
    idle_bound: int | None = None
    """Idle states with an exit latency above this many µs off (None: untouched)."""

    @property
    def anything(self) -> bool:
        return self.irqs or self.idle_bound is not None


def _own(annotations: Mapping[str, str], key: str) -> bool | None:
    """This project's toggle for the ``app`` container (its own key over the pod's)."""
    for scope in ("container.app", "pod"):
        value = annotations.get(f"{key}/{scope}")
        if value is not None:
            return value == "true"
    return None


def asked(annotations: Mapping[str, str]) -> Asked:
    """What ``annotations`` ask (valid ones: :func:`refusal` says whether they are)."""
    irqs = _own(annotations, OURS_IRQS)
    if irqs is None:
        irqs = annotations.get(CRIO_IRQ) in ("disable", "true")
    idle = _own(annotations, OURS_IDLE)
    bound: int | None = None
    if idle is not None:
        bound = 0 if idle else None
    elif (value := annotations.get(CRIO_IDLE)) == "disable":
        bound = 0
    elif value is not None and (matched := _LATENCY.fullmatch(value)):
        bound = int(matched.group(1))
    return Asked(irqs=irqs, idle_bound=bound)


def refusal(annotations: Mapping[str, str]) -> str | None:
    """``invalid-annotation`` when a CRI-O value is not one the plugin understands."""
    irq, idle = annotations.get(CRIO_IRQ), annotations.get(CRIO_IDLE)
    if irq is not None and irq not in ("disable", "true", "enable"):
        return INVALID_ANNOTATION
    if idle is not None and idle not in ("enable", "disable") and not _LATENCY.fullmatch(idle):
        return INVALID_ANNOTATION
    return None


def draw(rng: random.Random) -> dict[str, str]:
    """A quiet request's annotations: a valid one mostly, a refused one now and then."""
    return dict(rng.choice(REFUSED if rng.random() < 0.1 else VARIANTS))
