"""A container a Synchronize ran shared although it asks for more — a Guaranteed container
when the pool would have been empty, a pin from a namespace not allowed then — changes class
at its next update: the plugin places it afresh as a creation would be placed, or refuses
the update (``CpusetEngine.plan_resize``). Which class, and what the plugin may answer. A pin
whose namespace may still not pin, or whose annotation is invalid, stays shared."""

from __future__ import annotations

from typing import Final

from cpuset_core.cpuset import CPUSet

from .lifetimes import judged
from .model import INTEGER, MIXED, PINNED, SHARED, Container, Pod
from .parts import Checks, Model
from .prediction import INVALID_ANNOTATION, NAMESPACE, Prediction

CHANGING_CLASS: Final = "changing-class"
"""A container's kind while the model judges the class it may take at an update."""
KEPT_SHARED: Final = frozenset({NAMESPACE, INVALID_ANNOTATION})
"""Why a running pin stays where it runs at an update rather than being refused."""


def class_change(pod: Pod, container: Container, *, model: Model,
                 checks: Checks) -> tuple[str, Prediction] | None:
    """The class a shared-running container takes at its next update, and what the plugin may
    answer; ``None`` when it stays shared."""
    if container.kind != SHARED or not (container.cpus or pod.annotation is not None):
        return None
    if pod.annotation is not None and model.node.pin_refusals(pod)[1] & KEPT_SHARED:
        return None
    checks.refresh_integers()
    with model.lock:
        container.kind = CHANGING_CLASS  # neither shared nor exclusive while it is judged
        try:
            if pod.annotation is not None:
                return PINNED, judged(model.node, lambda: model.node.predict_pinned(pod))
            if container.mixed:
                return MIXED, judged(model.node, lambda: model.node.predict_integer(
                    container.cpus, on_pool=True))
            return INTEGER, judged(model.node,
                                   lambda: model.node.predict_integer(container.cpus))
        finally:
            container.kind = SHARED


def changed(pod: Pod, container: Container, kind: str, *, model: Model) -> None:
    with model.lock:
        container.kind = kind
        if kind == PINNED:
            pod.pin = CPUSet.parse(pod.annotation or "")
