"""What the placement service answers: a placement with the updates it causes, or a rebuild with
its corrections, in the order a runtime must apply them, and whatever the background updates
have pending, riding along."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

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
from cpuset_core.workload import toggle_of
from cpuset_service.journal import DecisionJournal
from cpuset_service.observer import Observer
from cpuset_service.pusher import UpdatePusher


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
    except AdmissionError:
        pass
    # A refused workload request (cpuset_core.workload) asks for what its QoS gives; only the
    # pin annotation's refusals are an annotated container's.
    plain = replace(pod, annotations={key: value for key, value in pod.annotations.items()
                                      if toggle_of(key) is None})
    try:
        return classify(plain, container, settings).kind
    except AdmissionError:
        return Kind.ANNOTATED


class AnswerUpdates:
    """Fills the answers to the runtime's hooks with updates, and accounts for what they carry:
    remembered as applied (the pusher does not send it again), logged, counted."""

    def __init__(self, pusher: UpdatePusher, journal: DecisionJournal, observer: Observer) -> None:
        self._pusher = pusher
        self._journal = journal
        self._observer = observer

    def fill(self, updates: list[ContainerUpdate], *busy: str, moves: Collection[str] = (),
             records: bool = True) -> list[ContainerUpdate]:
        """``updates`` and, after them, whatever the background pusher has pending for
        containers neither in them nor ``busy``, all :meth:`carried`: an answer is the one path
        to the runtime free of lock-order risk, so repairs and releases ride on it whenever the
        runtime asks something. With the kernel fast path, what the kernel takes of
        ``updates`` is written now and leaves the answer (its record follows in the
        background). ``moves``: the ids of ``updates`` that are moves; ``records``: whether
        lagging records may ride too (not on a creation's answer: containerd runs a runc update
        for each before it creates the container, decision 62; refused updates always ride)."""
        written, updates = self.kernel_first(updates)
        answered = {u.container_id for u in updates}
        updates = [*updates, *self._pusher.take_for_answer(
            {*busy, *answered, *(u.container_id for u in written)}, answered=answered,
            records=records)]
        self.carried(updates, moves=sum(1 for u in updates if u.container_id in moves))
        return updates

    def kernel_first(self, updates: Sequence[ContainerUpdate],
                     ) -> tuple[list[ContainerUpdate], list[ContainerUpdate]]:
        """Write what the kernel takes of ``updates`` (fast path); return ``(written, left)``."""
        written, left = self._pusher.kernel.apply(updates)
        if written:
            self._pusher.kernel_applied(written)
            self._journal.answered(written)
        return written, left

    def carried(self, updates: Sequence[ContainerUpdate], *, moves: int = 0) -> None:
        """Remember what an answer sets; ``moves`` of ``updates`` are moves (already logged as
        such), the rest are logged at debug, one per container."""
        for update in updates:
            self._pusher.record_applied(update.container_id, update.cpus, update.mems)
        self._journal.answered(updates)
        if updates:
            self._observer.response_updates([u.container_id for u in updates], moves)
