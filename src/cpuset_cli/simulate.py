"""Replaying an allocation trace (:mod:`cpuset_cli.trace`) through the real engine
(``nri-cpuset simulate``).

Decision time is measured here, in the CLI layer, around ``plan_create`` + ``commit``; the
clock is a parameter so tests are deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cpuset_adapters.kubelet import CFS_PERIOD
from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap
from cpuset_cli.placement_quality import (
    Metrics,
    QualityRecorder,
    SplitCoreTracker,
    owner_changes,
)
from cpuset_cli.trace import AddEvent, Event
from cpuset_core import (
    AdmissionError,
    Classification,
    ContainerFacts,
    DeviceLocality,
    Kind,
    PodFacts,
    Settings,
    Topology,
    classify,
)
from cpuset_core.policy.shared import exclusive_free


@dataclass(frozen=True, slots=True)
class Placed:
    """An admitted ``add``: its id and the CPUs it got."""

    id: int
    cpus: str


@dataclass(frozen=True, slots=True)
class Rejected:
    """A rejected ``add``: its id and the typed reason (``detail`` is the human message)."""

    id: int
    error: str
    detail: str = ""


Result = Placed | Rejected


@dataclass(frozen=True, slots=True)
class Simulation:
    """One result per ``add`` event, in event order, and the summary metrics."""

    results: tuple[Result, ...]
    metrics: Metrics


# -- replaying ---------------------------------------------------------------------------------


def facts_for(event: AddEvent, settings: Settings) -> tuple[PodFacts, ContainerFacts]:
    """The pod and container an ``add`` event stands for (a pinned pod, or a Guaranteed pod
    asking for ``request`` whole CPUs or a limit of ``millis``), in its namespace, with its
    annotations."""
    name = f"c{event.id}"
    container_id = str(event.id)
    devices = (DeviceLocality(device="the trace's devices", numa_nodes=event.devices),) \
        if event.devices else ()
    if event.pinned is not None:
        pod = PodFacts(sandbox_id=f"sandbox-{event.id}", namespace=event.namespace, name=name,
                       uid=container_id,
                       annotations={**event.annotations,
                                    settings.pin_annotation: event.pinned.format()},
                       cgroup_parent=f"/kubepods/burstable/pod{event.id}")
        return pod, ContainerFacts(id=container_id, sandbox_id=pod.sandbox_id, name="main",
                                   devices=devices)
    millis = event.millis if event.millis is not None else 1000 * (event.request or 0)
    pod = PodFacts(sandbox_id=f"sandbox-{event.id}", namespace=event.namespace, name=name,
                   uid=container_id, cgroup_parent=f"/kubepods/pod{event.id}",
                   annotations=dict(event.annotations))
    return pod, ContainerFacts(id=container_id, sandbox_id=pod.sandbox_id, name="main",
                               cpu_shares=millis * 1024 // 1000,
                               cpu_quota=millis * CFS_PERIOD // 1000, cpu_period=CFS_PERIOD,
                               devices=devices)


def exclusive_only(pod: PodFacts, facts: ContainerFacts, settings: Settings) -> bool:
    """Whether the container asks for exclusive CPUs alone (an integer one, not mixed): the
    requests placement quality is judged on, by either policy."""
    return _exclusive_request(pod, facts, settings) is not None


def _exclusive_request(pod: PodFacts, facts: ContainerFacts,
                       settings: Settings) -> Classification | None:
    """The container's classification when it asks for exclusive CPUs alone, else ``None``."""
    try:
        decided = classify(pod, facts, settings)
    except AdmissionError:
        return None
    return decided if decided.label == Kind.INTEGER.value else None


def replay(topology: Topology, events: Sequence[Event], *, settings: Settings | None = None,
           clock: Callable[[], int] = time.perf_counter_ns,
           on_event: Callable[[int], None] | None = None) -> Simulation:
    """Replay ``events`` through a fresh engine on ``topology`` and return the results.

    ``clock`` returns nanoseconds; ``on_event`` is called with the number of events done after
    each one (for a progress display).
    """
    engine = bootstrap.build_engine(StaticTopologySource(topology), settings)
    recorder = QualityRecorder(topology)
    tracker = SplitCoreTracker(topology)
    results: list[Result] = []
    for done, event in enumerate(events, start=1):
        before = engine.ledger
        if isinstance(event, AddEvent):
            pod, facts = facts_for(event, engine.settings)
            # Placement quality is judged for whole-CPU requests of exclusive CPUs alone, as
            # the kubelet has them (not for a mixed, opted-out or badly annotated one).
            # An isolated request is judged against the isolated CPUs it may take.
            asked = _exclusive_request(pod, facts, engine.settings)
            free = (None if asked is None else
                    exclusive_free(topology, before.reserved, engine.settings, asked.isolated))
            start = clock()
            try:
                plan = engine.plan_create(pod, facts)
                engine.commit(plan)
            except AdmissionError as exc:
                recorder.decision(clock() - start)
                results.append(Rejected(event.id, exc.reason, exc.detail))
                cpus = None
            else:
                recorder.decision(clock() - start)
                assert plan.placement is not None  # a create plan always places its container
                cpus = plan.placement.cpus
                results.append(Placed(event.id, cpus.format()))
                tracker.assign(owner_changes(before, engine.ledger,
                                             (m.previous_cpus | m.cpus for m in plan.moves)))
            if free is not None:
                assert event.request is not None  # whole CPUs asked: see exclusive_only
                recorder.request(event.request, free, cpus)
        else:
            engine.commit(engine.plan_release(str(event.id)))
            tracker.assign(owner_changes(before, engine.ledger))
        recorder.state(tracker.count)
        if on_event is not None:
            on_event(done)
    return Simulation(tuple(results), recorder.summary())
