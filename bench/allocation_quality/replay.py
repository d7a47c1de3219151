"""Replaying a trace through a policy other than the measured ``simulate.replay``: the kubelet
baseline, measured the same way, and our engine stepped only to know where its containers are."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable

from kubelet_baseline import KubeletTopology, take_by_topology

from cpuset_cli.placement_quality import PINNED_OWNER, QualityRecorder, SplitCoreTracker
from cpuset_cli.simulate import Placed, Rejected, Result, Simulation, exclusive_only, facts_for
from cpuset_cli.trace import AddEvent, DelEvent, Event
from cpuset_core import EMPTY, AdmissionError, CPUSet, CpusetEngine, Settings, Topology
from cpuset_core.policy.shared import exclusive_free

Allocator = Callable[[CPUSet, int], CPUSet]
"""``(free CPUs, count) -> chosen CPUs``; raises ``ValueError`` when it cannot choose."""


class AllocatorReplay:
    """Replays events like :func:`cpuset_cli.simulate.replay`, but choosing integer CPUs with
    ``allocate`` and never moving a container (pins just make CPUs unavailable). The metrics
    come from the same :class:`QualityRecorder` and :class:`SplitCoreTracker`; ``free`` is the
    same ``exclusive_free`` with the same (default) settings; the decision time is the allocator
    call. Feed events with :meth:`apply`, then read :meth:`simulation`.
    """

    def __init__(self, topology: Topology, allocate: Allocator, *,
                 clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self.topology = topology
        self._allocate = allocate
        self._clock = clock
        self._settings = Settings()
        self._recorder = QualityRecorder(topology)
        self._tracker = SplitCoreTracker(topology)
        self._owner: dict[int, int] = {}
        self._held: dict[int, CPUSet] = {}
        self._pins: dict[int, CPUSet] = {}
        self._pin_refs: dict[int, int] = {}
        self._results: list[Result] = []
        self.exclusive = 0
        """Bitmask of the CPUs integer containers hold."""
        self.pinned = 0

    def _owners(self, cpus: CPUSet) -> dict[int, str | None]:
        return {cpu: (str(self._owner[cpu]) if cpu in self._owner
                      else PINNED_OWNER if cpu in self._pin_refs else None) for cpu in cpus}

    def apply(self, event: Event) -> None:
        changed = EMPTY
        if isinstance(event, AddEvent) and event.pinned is not None:
            changed = self._pins[event.id] = event.pinned
            for cpu in changed:
                self._pin_refs[cpu] = self._pin_refs.get(cpu, 0) + 1
            self.pinned |= changed.mask
            self._results.append(Placed(event.id, changed.format()))
        elif isinstance(event, AddEvent) and (request := kubelet_request(event)) is None:
            self._results.append(Placed(event.id, EMPTY.format()))
        elif isinstance(event, AddEvent):
            changed = self._add_integer(event, request)
        elif event.id in self._held:
            changed = self._held.pop(event.id)
            for cpu in changed:
                del self._owner[cpu]
            self.exclusive &= ~changed.mask
        elif event.id in self._pins:
            changed = self._pins.pop(event.id)
            for cpu in changed:
                self._pin_refs[cpu] -= 1
                if not self._pin_refs[cpu]:
                    del self._pin_refs[cpu]
                    self.pinned &= ~(1 << cpu)
        if changed:
            self._tracker.assign(self._owners(changed))
        self._recorder.state(self._tracker.count)

    def _add_integer(self, event: AddEvent, request: int) -> CPUSet:
        """Give ``event`` ``request`` exclusive CPUs, if the allocator can; return them."""
        changed = EMPTY
        free = exclusive_free(self.topology, CPUSet.from_mask(self.exclusive | self.pinned),
                              self._settings)
        start = self._clock()
        try:
            chosen: CPUSet | None = self._allocate(free, request)
        except ValueError as exc:
            self._recorder.decision(self._clock() - start)
            chosen = None
            self._results.append(Rejected(event.id, "InsufficientCpus", str(exc)))
        else:
            self._recorder.decision(self._clock() - start)
            assert chosen is not None
            assert len(chosen) == request, chosen
            assert chosen.issubset(free), chosen
            changed = self._held[event.id] = chosen
            for cpu in chosen:
                self._owner[cpu] = event.id
            self.exclusive |= chosen.mask
            self._results.append(Placed(event.id, chosen.format()))
        # The same requests as ours are judged (simulate's own test), so that an opted-out
        # container the kubelet gives exclusive CPUs anyway is not counted.
        if exclusive_only(*facts_for(event, self._settings), self._settings):
            self._recorder.request(request, free, chosen)
        return changed

    def simulation(self) -> Simulation:
        return Simulation(tuple(self._results), self._recorder.summary())


def kubelet_request(event: AddEvent) -> int | None:
    """The exclusive CPUs the kubelet's static policy gives an unpinned ``add``: its whole CPU
    limit, whatever its annotations (it reads none); ``None`` for a fractional limit, which
    the kubelet leaves on the shared pool."""
    if event.millis is None:
        assert event.request is not None
        return event.request
    whole, fraction = divmod(event.millis, 1000)
    return None if fraction else whole


def replay_with_allocator(topology: Topology, events: Iterable[Event],
                          allocate: Allocator) -> Simulation:
    """Replay ``events`` through ``allocate`` (see :class:`AllocatorReplay`)."""
    run = AllocatorReplay(topology, allocate)
    for event in events:
        run.apply(event)
    return run.simulation()


def kubelet(topology: Topology) -> Allocator:
    """The baseline allocator on ``topology``."""
    machine = KubeletTopology(topology)
    return lambda free, count: take_by_topology(machine, free, count)


class EngineStepper:
    """Our engine, stepped event by event while the ``pinned`` trace is written, only to know
    where its integer containers are (the measured run is ``simulate.replay``)."""

    def __init__(self, topology: Topology) -> None:
        self.engine = CpusetEngine(topology)

    @property
    def exclusive(self) -> int:
        return self.engine.ledger.exclusive.mask

    def apply(self, event: Event) -> None:
        engine = self.engine
        if isinstance(event, DelEvent):
            engine.commit(engine.plan_release(str(event.id)))
            return
        pod, facts = facts_for(event, engine.settings)  # as `simulate` replays it
        with contextlib.suppress(AdmissionError):  # a rejected add changes nothing
            engine.commit(engine.plan_create(pod, facts))
