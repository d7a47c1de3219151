"""The plugin's Prometheus metrics: an :class:`~cpuset_service.observer.Observer` and
:class:`~cpuset_service.observer.HookObserver` that counts what the service and the NRI adapter
report, plus gauges read from the live state at scrape time.

Every metric lives in a private registry (nothing from the process-global default one), is
named ``nri_cpuset_*`` with its unit, and has low-cardinality labels only: hook names, kinds,
results and the core's stable error reasons, never pod or container names.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from cpuset_adapters.kubernetes.reasons import REASONS
from cpuset_adapters.observability.exposition import (
    Counter,
    Family,
    Histogram,
    Registry,
    gauge_family,
)
from cpuset_adapters.observability.hooks import Clock, HookTracker, InFlight
from cpuset_adapters.systemd.scope_writer import OUTCOMES as SYSTEMD_OUTCOMES
from cpuset_core import Kind
from cpuset_core.starts import NOT_RUNNING_REASONS
from cpuset_core.verify import CAUSES
from cpuset_service.observer import AdmissionResult, BatchOutcome, HookResult
from cpuset_service.verification import Verdict

_log = logging.getLogger("nri_cpuset.metrics")

DEFAULT_REQUEST_TIMEOUT_S = 2.0
"""NRI's request timeout when neither the operator nor the runtime says (Configure sends 0
before NRI v0.7)."""

PUBLISH_RESULTS = ("created", "updated", *REASONS)
"""What a write of the NodeResourceTopology object can end with."""

QUIET_OUTCOMES = ("changed", "restored", "skipped", "failed")
QUIET_REPAIRS = ("irq", "idle", "governor", "irqbalance")  # cpuset_cli.daemon.quiet_repairs
"""What became of a file in a quiet-CPU pass (``cpuset_service.quiet.QuietResult``)."""

BUCKET_FRACTIONS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
"""Hook duration buckets as fractions of the request timeout: sub-millisecond decisions are
the norm, 0.1 is where the plugin logs a slow handler, 1.0 is where the runtime drops it."""


def hook_buckets(request_timeout_s: float) -> tuple[float, ...]:
    """Histogram bucket bounds (seconds) for a runtime request timeout (0 means NRI's 2 s)."""
    timeout = request_timeout_s if request_timeout_s > 0 else DEFAULT_REQUEST_TIMEOUT_S
    return tuple(round(f * timeout, 6) for f in BUCKET_FRACTIONS)


@dataclass(frozen=True, slots=True, kw_only=True)
class StateSample:
    """The live state the gauges show, read at scrape time (no double bookkeeping)."""

    exclusive_cpus: int
    shared_pool_cpus: int
    pinned_cpus: int
    containers: dict[Kind, int]
    runtime_connected: bool
    synchronized: bool
    away_from_devices: dict[Kind, int] = field(default_factory=dict)
    """Containers with a device hint whose CPUs lie outside their devices' NUMA nodes, by
    kind (a pin that asked for them; an integer container the hint could not hold)."""


class PluginMetrics:
    """Implements the service's ``Observer`` and the NRI adapter's ``HookObserver`` with
    Prometheus metrics; also tracks the hooks in flight for ``/healthz``."""

    def __init__(self, request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, *,
                 clock: Clock = time.monotonic) -> None:
        self.registry = Registry()
        self.hooks = HookTracker(clock)
        self._sample: Callable[[], StateSample] | None = None
        r = self.registry
        self._hook_duration = Histogram(
            "nri_cpuset_hook_duration_seconds", "Time to answer one runtime call, by NRI "
            "method and result.", ["hook", "result"], buckets=hook_buckets(request_timeout_s),
            registry=r)
        self._admissions = Counter(
            "nri_cpuset_admissions", "CreateContainer decisions by kind, result and rejection "
            "reason.", ["kind", "result", "reason"], registry=r)
        self._response_updates = Counter(
            "nri_cpuset_response_updates", "Live updates of other containers carried on event "
            "responses (containerd applies them; it only logs their failures).", registry=r)
        self._live_moves = Counter(
            "nri_cpuset_live_moves", "Integer containers moved off CPUs a pin took (carried "
            "on the CreateContainer response).", registry=r)
        self._update_batches = Counter(
            "nri_cpuset_update_batches", "UpdateContainers calls the plugin made on its own, "
            "by outcome.", ["outcome"], registry=r)
        self._live_updates = Counter(
            "nri_cpuset_live_updates", "Container updates in those UpdateContainers calls, by "
            "outcome.", ["outcome"], registry=r)
        # Totals since start (a counter): a gauge of the last check would hide a drift that a
        # later clean synchronize follows, and alerting on "unrepaired > 0" would never clear.
        self._drift = Counter(
            "nri_cpuset_drift_containers", "Containers found off their placement at a "
            "synchronize or CRI inventory since start, by whether the corrections repaired "
            "them.", ["state"], registry=r)
        for kind in Kind:
            self._admissions.labels(kind.value, "admitted", "")
        for state in ("repaired", "unrepaired"):
            self._drift.labels(state)
        self._verify_passes = Counter(
            "nri_cpuset_verify_passes", "Verifier passes that compared every container's "
            "cgroup with its placement.", registry=r)
        self._verify_found = Counter(
            "nri_cpuset_verify_drift_found", "Containers a verifier pass found off their "
            "placement (once per episode), by cause: cpus, mems, unreadable.", ["cause"],
            registry=r)
        for cause in CAUSES:
            self._verify_found.labels(cause)
        self._verify_repaired = Counter(
            "nri_cpuset_verify_drift_repaired", "Containers found off their placement that a "
            "later pass saw repaired.", registry=r)
        self._verify_unrepairable = Counter(
            "nri_cpuset_verify_drift_unrepairable", "Containers still off their placement "
            "after the verifier re-sent it at 5 passes (it keeps trying).", registry=r)
        self._verify_drifting = 0
        self._not_running = Counter(
            "nri_cpuset_not_running_released", "Containers not seen to start whose CPUs went "
            "back because they will not run (a start that failed, a state the runtime does "
            "not know, not started within the grace), by kind and reason.",
            ["kind", "reason"], registry=r)
        for reason in NOT_RUNNING_REASONS:
            for kind in Kind:
                self._not_running.labels(kind.value, reason)
        self._start_checks_failed = Counter(
            "nri_cpuset_start_checks_failed", "Times the runtime could not say whether "
            "containers not seen to start will run (nothing was given back then).", registry=r)
        self._systemd_units = Counter(
            "nri_cpuset_systemd_unit_updates", "Containers in systemd scopes whose unit's "
            "AllowedCPUs/AllowedMemoryNodes the kernel fast path set over D-Bus with their "
            "cgroup files, by outcome (anything but set: the files only).", ["outcome"],
            registry=r)
        for outcome in SYSTEMD_OUTCOMES:
            self._systemd_units.labels(outcome)
        self._quiet_files = Counter(
            "nri_cpuset_quiet_files", "Files quiet CPUs wrote outside container cgroups "
            "(IRQ affinities, idle states, governors), by outcome.", ["outcome"], registry=r)
        for outcome in QUIET_OUTCOMES:
            self._quiet_files.labels(outcome)
        self._quiet_repairs = Counter(
            "nri_cpuset_quiet_repairs", "Quiet-CPU settings found changed back since written "
            "(an IRQ moved back by irqbalance, a driver or a hand; an idle state or governor "
            "turned back; an irqbalance told anew) and rewritten, by what.", ["what"],
            registry=r)
        for what in QUIET_REPAIRS:
            self._quiet_repairs.labels(what)
        for outcome in ("applied", "failed", "rolled_back"):
            self._update_batches.labels(outcome)
            self._live_updates.labels(outcome)
        self._topology_publishes = Counter(
            "nri_cpuset_topology_publishes", "Writes of the node's NodeResourceTopology "
            "object, by result: created, updated, or why it failed.", ["result"], registry=r)
        for result in PUBLISH_RESULTS:
            self._topology_publishes.labels(result)
        self._topology_current: bool | None = None
        self._loop_stalls = Counter(
            "nri_cpuset_event_loop_stalls", "Times the event loop stood still for 5 s or more "
            "(no hook answered meanwhile; the log says where it stood).", registry=r)
        r.register(_StateCollector(self))

    # -- what the gauges read --

    def watch(self, sample: Callable[[], StateSample]) -> None:
        """Read the live state with ``sample`` at every scrape (called from the HTTP thread)."""
        self._sample = sample

    def sample(self) -> StateSample | None:
        return self._sample() if self._sample is not None else None

    def exposition(self) -> bytes:
        """The text format of every metric, for ``/metrics``."""
        return self.registry.exposition()

    def drifting(self) -> int:
        """Containers the last verifier pass found off their placement."""
        return self._verify_drifting

    def stuck_hooks(self) -> list[tuple[InFlight, float]]:
        return self.hooks.stuck()

    # -- Observer --

    def hook_started(self, hook: str, request_timeout_ms: int) -> int:
        timeout_s = (request_timeout_ms / 1000.0 if request_timeout_ms > 0
                     else DEFAULT_REQUEST_TIMEOUT_S)
        return self.hooks.start(hook, timeout_s)

    def hook_finished(self, token: int, result: HookResult) -> None:
        finished = self.hooks.finish(token)
        if finished is not None:
            hook, seconds = finished
            self._hook_duration.labels(hook, result).observe(seconds)

    def admission(self, kind: Kind, result: AdmissionResult, reason: str) -> None:
        self._admissions.labels(kind.value, result, reason).inc()

    def response_updates(self, container_ids: Sequence[str], moves: int) -> None:
        self._response_updates.inc(len(container_ids))
        self._live_moves.inc(moves)

    def update_batch(self, outcome: BatchOutcome, container_ids: Sequence[str]) -> None:
        self._update_batches.labels(outcome).inc()
        self._live_updates.labels(outcome).inc(len(container_ids))

    def verified(self, verdict: Verdict) -> None:
        self._verify_passes.inc()
        for cause, count in verdict.found_by_cause().items():
            self._verify_found.labels(cause).inc(count)
        self._verify_repaired.inc(len(verdict.repaired))
        self._verify_unrepairable.inc(len(verdict.unrepairable))
        self._verify_drifting = len(verdict.drifting)

    def drift(self, repaired: int, unrepaired: int) -> None:
        self._drift.labels("repaired").inc(repaired)
        self._drift.labels("unrepaired").inc(unrepaired)

    def not_running(self, kind: Kind, reason: str) -> None:
        self._not_running.labels(kind.value, reason).inc()

    def start_check_failed(self) -> None:
        self._start_checks_failed.inc()

    def systemd_units(self, outcome: str, containers: int) -> None:
        """What became of the scopes' unit writes (``systemd.scope_writer.Count``)."""
        self._systemd_units.labels(outcome).inc(containers)

    def quiet_files(self, outcome: str, files: int) -> None:
        """One quiet-CPU pass's files by outcome (``QUIET_OUTCOMES``)."""
        self._quiet_files.labels(outcome).inc(files)

    def quiet_repairs(self, what: str, files: int) -> None:
        """One check's repairs of ``what`` (``QUIET_REPAIRS``)."""
        self._quiet_repairs.labels(what).inc(files)

    def loop_stalled(self) -> None:
        """The event loop stood still (``cpuset_cli.daemon.loop_watch``; its thread calls)."""
        self._loop_stalls.inc()

    # -- the topology publisher (cpuset_cli.daemon.topology_publisher) --

    def topology_published(self, result: str, *, current: bool) -> None:
        """One write of the NodeResourceTopology object ended with ``result`` (``created``,
        ``updated`` or a failure reason); ``current``: the object now matches the node."""
        self._topology_publishes.labels(result).inc()
        self._topology_current = current

    def topology_current(self, *, current: bool) -> None:
        """Whether the published object matches the node's state (``False`` while a change
        waits to be published or a write keeps failing)."""
        self._topology_current = current

    def topology_is_current(self) -> bool | None:
        """``None`` while no publisher runs."""
        return self._topology_current


class _StateCollector:
    """Gauges computed from the live state at each scrape."""

    def __init__(self, metrics: PluginMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Family]:
        try:
            sample = self._metrics.sample()
        except Exception:  # noqa: BLE001 - a broken read must not take the other metrics down
            _log.exception("reading the live state for metrics failed")
            return
        if sample is None:
            return
        yield _gauge("nri_cpuset_exclusive_cpus", "CPUs held exclusively by integer "
                     "containers.", sample.exclusive_cpus)
        yield _gauge("nri_cpuset_shared_pool_cpus", "CPUs in the shared pool.",
                     sample.shared_pool_cpus)
        yield _gauge("nri_cpuset_pinned_cpus", "CPUs pinned by annotated containers.",
                     sample.pinned_cpus)
        yield _gauge("nri_cpuset_runtime_connected", "1 while registered with the runtime on "
                     "a live connection.", int(sample.runtime_connected))
        yield _gauge("nri_cpuset_synchronized", "1 once the state was rebuilt from the "
                     "runtime (Synchronize or CRI inventory) on this connection.",
                     int(sample.synchronized))
        containers = gauge_family("nri_cpuset_containers", "Containers the plugin places, by "
                                  "kind.", labels=["kind"])
        for kind in Kind:
            containers.add_metric([kind.value], sample.containers.get(kind, 0))
        yield containers
        away = gauge_family("nri_cpuset_containers_away_from_devices", "Containers whose "
                            "CPUs lie outside the NUMA nodes of their devices, by kind.",
                            labels=["kind"])
        for kind in (Kind.ANNOTATED, Kind.INTEGER):
            away.add_metric([kind.value], sample.away_from_devices.get(kind, 0))
        yield away
        yield _gauge("nri_cpuset_verify_drifting_containers", "Containers the last verifier "
                     "pass found off their placement.", self._metrics.drifting())
        current = self._metrics.topology_is_current()
        if current is not None:
            yield _gauge("nri_cpuset_topology_current", "1 while the published "
                         "NodeResourceTopology matches the node's state.", int(current))


def _gauge(name: str, documentation: str, value: float) -> Family:
    return gauge_family(name, documentation, value=value)
