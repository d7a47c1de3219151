"""The ``nri-cpuset run`` daemon: the placement service behind one NRI session, its background
updates, and the other sources of change (CRI inventory, hotplug watcher, configuration)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cpuset_adapters import default_paths
from cpuset_adapters.config import Observability
from cpuset_adapters.cri.start_probe import CriStartProbe
from cpuset_adapters.device_locality import LocateDevices
from cpuset_adapters.hotplug import OnlineCpuWatcher
from cpuset_adapters.nri.deadlock import locks_are_safe
from cpuset_adapters.nri.handler import CpusetNriHandler, KernelView
from cpuset_adapters.nri.handler_port import RuntimeInfo
from cpuset_adapters.nri.launch import Endpoint, InheritedSocket, Launch
from cpuset_adapters.nri.session import NriSession
from cpuset_adapters.observability.metrics import PluginMetrics
from cpuset_adapters.process_memory import limit_heaps, release_free_memory
from cpuset_adapters.systemd_notify import SystemdNotifier
from cpuset_cli.daemon.introspection import Introspection
from cpuset_cli.daemon.inventory import CriInventory
from cpuset_cli.daemon.live_config import LiveConfig
from cpuset_cli.daemon.loop_watch import LoopWatch
from cpuset_cli.daemon.quiet_loop import QuietLoop
from cpuset_cli.daemon.ready_notice import ReadyNotice, synchronized_status
from cpuset_cli.daemon.start_watch import StartWatch
from cpuset_cli.daemon.update_patience import UpdatePatience, send_patiently
from cpuset_cli.daemon.verify_loop import VerifierLoop
from cpuset_core import (
    ContainerUpdate,
    Topology,
    UpdateTransactionError,
)
from cpuset_service.placement import PlacementService
from cpuset_service.pusher import QUIET_POLL
from cpuset_service.staged import apply_staged

if TYPE_CHECKING:  # imported by the composition root only when their feature is on
    from cpuset_cli.daemon.events import EventReporting
    from cpuset_cli.daemon.topology_publisher import TopologyPublisher

_log = logging.getLogger("nri_cpuset.daemon")

DEFAULT_CRI_SOCKET = default_paths.CRI_SOCKET
QUIET = 2.0
"""Seconds without a runtime call before the plugin calls UpdateContainers itself on a runtime
whose locks can deadlock (``locks_are_safe``); until then pending updates ride on answers."""
MEMORY_PERIOD = 10.0
"""Seconds between returns of freed memory to the system (``process_memory``), each made
when the runtime has not called for a second."""


@dataclass
class Daemon:
    """Everything the running plugin is made of (built by ``bootstrap.build_daemon``)."""

    service: PlacementService
    launch: Launch
    """Our name and index, and where the runtime is."""
    cri_socket: str = DEFAULT_CRI_SOCKET
    status_socket: str | None = None
    metrics: PluginMetrics = field(default_factory=PluginMetrics)
    listen: str | None = None
    """``host:port`` for /metrics, /healthz and /readyz; ``None`` serves none."""
    config: LiveConfig | None = None
    """The running configuration (``config.current``), reloaded on SIGHUP and file change."""
    watcher: OnlineCpuWatcher | None = None
    """Polls the online CPU list (``None``: the topology is fixed, e.g. from a file)."""
    verifier: VerifierLoop | None = None
    """Confirms placements against the kernel (``None``: not verified)."""
    kernel_path: str = "through the runtime only"
    """Which path other containers' updates take, and why (logged at start)."""
    kernel_view: KernelView | None = None
    """Reads containers' cgroups: a Synchronize takes cpusets from the kernel where it can."""
    notifier: SystemdNotifier = field(default_factory=SystemdNotifier)
    """systemd's ``NOTIFY_SOCKET``, when a ``Type=notify`` unit started the plugin."""
    request_budget: Callable[[float], None] | None = None
    """Told the runtime's request timeout (seconds) at Configure: how long the kernel fast
    path may wait for systemd."""
    start_probe: CriStartProbe | None = None
    """Tells whether containers not seen to start will run (``None``: they keep their CPUs
    until removed)."""
    publisher: TopologyPublisher | None = None
    """Keeps the node's NodeResourceTopology current (``None``: not published)."""
    events: EventReporting | None = None
    """Writes Kubernetes Events for the decisions (``None``: events are off)."""
    locate_devices: LocateDevices | None = None
    """Finds where containers' devices are (``None``: devices are not looked at)."""
    quiet: QuietLoop | None = None
    """Reconciles the node's quiet CPUs (``None``: requests are kept, nothing is written)."""
    inventory: asyncio.Task[None] | None = field(default=None, init=False)
    patience: UpdatePatience = field(default_factory=UpdatePatience, init=False)
    """How long the plugin's own UpdateContainers calls may go unanswered (older runtimes)."""
    ready_notice: ReadyNotice = field(init=False)
    handler: CpusetNriHandler = field(init=False)
    session: NriSession = field(init=False)
    introspection: Introspection = field(init=False)
    """What the daemon shows of itself: gauges, probes, the status document, their servers."""
    start_watch: StartWatch | None = field(init=False)

    def __post_init__(self) -> None:
        # Raises InvalidPluginIdentityError (a ValueError) for a name or index the runtime
        # would refuse.
        self.ready_notice = ReadyNotice(self.notifier, lambda: synchronized_status(
            self.handler.runtime, len(self.service.engine.ledger.entries)))
        self.handler = CpusetNriHandler(self.service, on_configured=self.configured,
                                        on_synchronized=self.ready_notice.synchronized,
                                        kernel_view=self.kernel_view,
                                        locate_devices=self.locate_devices)
        self.session = NriSession(self.handler, name=self.launch.name, index=self.launch.index,
                                  observer=self.metrics)
        self.introspection = Introspection(
            service=self.service, handler=self.handler, session=self.session,
            metrics=self.metrics, verifier=self.verifier, status_socket=self.status_socket,
            listen=self.listen)
        self.metrics.watch(self.introspection.sample)
        self.start_watch = (None if self.start_probe is None
                            else StartWatch(self.service, self.start_probe))
        self.service.pusher.may_send_records = self._locks_safe
        # Records in calls of our own wait until no creation or start is under way and the
        # runtime has been quiet (record_pace; issue 45): they contend for its NRI lock.
        pace = self.service.pusher.pace
        pace.waiting, pace.clock = self.service.starts.unstarted, time.monotonic
        pace.quiet_for = lambda: self.session.quiet_for()  # noqa: PLW0108 - late-bound
        if self.verifier is not None:
            self.verifier.runtime_quiet = lambda: self.session.quiet_for()  # noqa: PLW0108

    def _locks_safe(self) -> bool:
        info = self.handler.runtime
        return info is not None and locks_are_safe(info.nri_version)

    def _answers_only(self) -> bool:
        """Whether the plugin never calls UpdateContainers itself: pre-installed on a runtime
        whose locks can deadlock, where dropping the connection would end it for good; its
        updates ride on answers only (decision 51)."""
        return not self._locks_safe() and isinstance(self.endpoint, InheritedSocket)

    def _may_call(self) -> bool:
        """Whether the pusher may call UpdateContainers now: never where updates ride on
        answers only; on a runtime whose locks can deadlock, after a quiet spell."""
        if self._answers_only():
            return False
        return self._locks_safe() or self.session.quiet_for() >= QUIET

    async def _apply_corrections(self, updates: Sequence[ContainerUpdate]) -> None:
        """One step of the CRI inventory's corrections: into the kernel first, the rest on
        the answers to the runtime's next calls. The inventory runs on NRI before v0.7 only,
        whose locks a call of the plugin's own can deadlock, and a pre-installed plugin's
        connection, once dropped, is never given back (decision 51)."""
        rest = self.service.pusher.write_first(updates)
        self.service.pusher.refused(u.container_id for u in rest)

    async def _send_when_quiet(self, updates: Sequence[ContainerUpdate]) -> None:
        """One step of a staged transaction of the plugin's own (what the kernel refused),
        with the pusher's care: after a quiet spell where the runtime's locks can deadlock,
        and patiently there (decision 51)."""
        while not self._may_call():
            await asyncio.sleep(QUIET_POLL)
        await self._send(updates)

    async def _send(self, updates: Sequence[ContainerUpdate]) -> None:
        if self._locks_safe():
            await self.session.apply_updates(updates)
        else:  # a deadlocked call never returns; a long batch does, at runc's pace
            await send_patiently(self.session, updates, self.patience)

    @property
    def endpoint(self) -> Endpoint:
        return self.launch.endpoint

    @property
    def observability(self) -> Observability:
        """``[observability]`` as the daemon runs it (``listen``, ``log_level``,
        ``log_format``); the built-in defaults without a configuration."""
        return self.config.current.observability if self.config else Observability()

    def configured(self, info: RuntimeInfo) -> None:
        """Apply the runtime's plugin config (pre-installed plugins' drop-in file), if any.

        A pre-installed plugin on a runtime older than NRI v0.7 (which sends no timeouts in
        Configure) is never synchronized: take the inventory over CRI instead."""
        if self.request_budget is not None and info.request_timeout_ms > 0:
            self.request_budget(info.request_timeout_ms / 1000)
        if not locks_are_safe(info.nri_version):
            _log.info("the runtime's NRI can deadlock on an UpdateContainers call that "
                      "overlaps an event (NRI before v0.12.1, containerd#13733): the runtime's "
                      "record of what the plugin wrote into the kernel follows on the answers "
                      "to the runtime's own calls only, never in a call of the plugin's own")
        if self.config is not None and info.config.strip():
            self.config.apply_runtime_config(info.config)
            self.cri_socket = self.config.current.runtime.cri_socket
            if self.start_probe is not None:
                self.start_probe.cri_socket = self.cri_socket
        if not isinstance(self.endpoint, InheritedSocket):
            return
        if info.registration_timeout_ms == 0 and self.inventory is None:
            _log.info("the runtime does not synchronize pre-installed plugins: reading running "
                      "containers over CRI at %s", self.cri_socket)
            inventory = CriInventory(self.service, self._apply_corrections, self.cri_socket)
            self.inventory = asyncio.get_running_loop().create_task(inventory.take(),
                                                                    name="cri-inventory")

    async def topology_changed(self, topology: Topology) -> None:
        """CPUs went offline or came back: re-place every container and apply the moves as
        one staged transaction (shrink, move, grow). The change is committed first, like a
        release: the CPUs are gone (or back) whatever the runtime does with the updates."""
        plan = self.service.topology_changed(topology)
        if self.config is not None:
            self.config.topology = topology  # reloads are checked against today's CPUs
        if not plan.updates or not self.session.connected:
            # Not connected: the next Synchronize corrects every container anyway.
            return
        updates = self.service.pusher.write_first(plan.updates)
        if updates and self._answers_only():
            self.service.pusher.refused(u.container_id for u in updates)
            return
        try:
            await apply_staged(self._send_when_quiet, updates, "topology change",
                               observer=self.service.observer)
        except UpdateTransactionError as exc:
            _log.error("%s; retrying from the background", exc)
            self.service.pusher.force(u.container_id for u in plan.updates)
            return
        for update in updates:
            self.service.pusher.record_applied(update.container_id, update.cpus, update.mems)
        if self.service.ledger is not plan.result:
            # Decided while the updates were in flight: the pusher sends whatever differs.
            self.service.pusher.mark_dirty(u.container_id for u in plan.updates)

    async def run(self) -> None:
        """Serve until cancelled (or, for a pre-installed plugin, until the runtime closes)."""
        limit_heaps()  # before any thread starts (process_memory)
        _log.info("other containers' cpuset updates: %s", self.kernel_path)
        # What exists now (modules, classes, the configuration) is never garbage: a full
        # collection, which lands on whatever hook allocates at that moment, then skips it
        # (measured in-process with 500 containers decided after it: 8-17 ms -> 0.1 ms).
        gc.freeze()
        status = await self.introspection.serve_status()
        http = self.introspection.serve_http()
        pushing = asyncio.create_task(self.service.pusher.run(self._send, quiet=self._may_call),
                                      name="update-pusher")
        watching = (asyncio.create_task(self.config.watch(), name="config-watcher")
                    if self.config is not None else None)
        verifying = (None if self.verifier is None else
                     asyncio.create_task(self.verifier.run(), name="verifier"))
        trimming = asyncio.create_task(self._release_memory(), name="memory")
        loop_watch = asyncio.create_task(LoopWatch(self.metrics.loop_stalled).run(),
                                         name="loop-watch")
        starts = (None if self.start_watch is None else
                  asyncio.create_task(self.start_watch.run(), name="start-watch"))
        publishing = (None if self.publisher is None else
                      asyncio.create_task(self.publisher.run(), name="topology-publisher"))
        reporting = (None if self.events is None else
                     asyncio.create_task(self.events.run(), name="events"))
        quieting = None if self.quiet is None else asyncio.create_task(self.quiet.run(),
                                                                      name="quiet-cpus")
        hotplug = None if self.watcher is None else asyncio.create_task(
            self.watcher.run(lambda: self.service.engine.topology.online,
                             self.topology_changed), name="hotplug-watcher")
        try:
            await self.session.run_forever(self.endpoint)
        finally:
            if status is not None:
                status.close()
            if http is not None:
                http.close()
            for task in (pushing, watching, verifying, trimming, starts, hotplug, publishing,
                         reporting, quieting, loop_watch, self.inventory):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _release_memory(self) -> None:
        while True:
            await asyncio.sleep(MEMORY_PERIOD)
            if self.session.quiet_for() >= 1.0:
                release_free_memory()

    def reload(self) -> None:
        """SIGHUP: read the configuration file again (validated, then swapped)."""
        if self.config is None:
            _log.warning("SIGHUP: this daemon runs without a configuration to reload")
            return
        self.config.reload_file("SIGHUP")

    async def run_until_signalled(self) -> None:
        """Run, stop cleanly on SIGTERM or SIGINT, and reload the configuration on SIGHUP."""
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        assert main is not None
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, main.cancel)
        loop.add_signal_handler(signal.SIGHUP, self.reload)
        try:
            await self.run()
        except asyncio.CancelledError:
            _log.info("stopping on signal")
            self.ready_notice.stopping()
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(signum)
