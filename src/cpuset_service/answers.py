"""What the placement service answers: a placement with the updates it causes, or a rebuild with
its corrections, in the order a runtime must apply them."""

from __future__ import annotations

from dataclasses import dataclass

from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    ContainerUpdate,
    Kind,
    Placement,
    Plan,
    PodFacts,
    Settings,
    classify,
)


@dataclass(frozen=True, slots=True)
class Synchronized:
    """A committed rebuild and its corrections, in the order a runtime must apply them."""

    plan: Plan
    updates: list[ContainerUpdate]


@dataclass(frozen=True, slots=True)
class Admission:
    """A created container's placement and the updates to other containers it causes, in the
    order a runtime must apply them (see :func:`response_order`)."""

    placement: Placement
    updates: list[ContainerUpdate]



def response_order(plan: Plan) -> list[ContainerUpdate]:
    """The plan's updates in the order a runtime should apply them when they ride on an event's
    answer, where each container may appear only once: shared containers that only shrink
    first (they leave the CPUs the others are about to take), then moved integer containers,
    then every other change."""
    first: list[ContainerUpdate] = []
    moves: list[ContainerUpdate] = []
    last: list[ContainerUpdate] = []
    for update in plan.updates:
        if update.kind is not Kind.SHARED:
            moves.append(update)
        elif update.cpus.issubset(update.previous_cpus):
            first.append(update)
        else:
            last.append(update)
    return [*first, *moves, *last]



def kind_asked(pod: PodFacts, container: ContainerFacts, settings: Settings) -> Kind:
    """The kind a rejected container asked to be (for the admissions metric)."""
    try:
        return classify(pod, container, settings).kind
    except AdmissionError:  # classification only fails on the pin annotation
        return Kind.ANNOTATED
