"""What the running daemon shows of itself: the state gauges ``/metrics`` reads, ``/healthz`` and
``/readyz``, the live document ``nri-cpuset inspect`` reads from the status socket, and the
servers that show them. Each is an aid: one that cannot be served is logged, and the plugin pins
containers anyway."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.nri.session import NriSession
from cpuset_adapters.observability import probes
from cpuset_adapters.observability.http import Endpoints, Probe, ProbeServer
from cpuset_adapters.observability.metrics import PluginMetrics, StateSample
from cpuset_adapters.status_socket import serve_status
from cpuset_cli import state_view
from cpuset_cli.daemon.verify_loop import VerifierLoop
from cpuset_core.placing import away_by_kind
from cpuset_service.placement import PlacementService

_log = logging.getLogger("nri_cpuset.daemon")


@dataclass(eq=False)
class Introspection:
    """Reads the daemon's parts, never changes them (built by the ``Daemon``)."""

    service: PlacementService
    handler: CpusetNriHandler
    session: NriSession
    metrics: PluginMetrics
    verifier: VerifierLoop | None = None
    status_socket: str | None = None
    """The status socket's path (``None``: not served)."""
    listen: str | None = None
    """``host:port`` for /metrics, /healthz and /readyz (``None``: not served)."""

    async def serve_status(self) -> asyncio.Server | None:
        """The status socket, if asked for and it can be served (else why not is logged)."""
        if not self.status_socket:
            return None
        try:
            return await serve_status(self.status_socket, self.snapshot)
        except OSError as exc:
            _log.error("status socket %s not served (inspect and explain will not work): %s",
                       self.status_socket, exc)
            return None

    def serve_http(self) -> ProbeServer | None:
        """/metrics and the probes, started, if asked for and the address can be served (a bad
        or busy one is logged)."""
        if not self.listen:
            return None
        try:
            server = ProbeServer(self.listen, Endpoints(
                metrics=self.metrics.exposition, health=self.health, ready=self.readiness))
        except (OSError, ValueError) as exc:
            _log.error("metrics and probes not served on %s (no /metrics, /healthz, /readyz): "
                       "%s", self.listen, exc)
            return None
        server.start()
        return server

    def health(self) -> Probe:
        """``/healthz`` (any thread): fails only when a hook is stuck."""
        return probes.health(self.metrics.stuck_hooks())

    def readiness(self) -> Probe:
        """``/readyz`` (any thread): registered and synchronized."""
        return probes.readiness(registered=self.session.connected,
                                synchronized=self.service.synchronized)

    def sample(self) -> StateSample:
        """What the state gauges show. Runs on the HTTP thread while the event loop may be
        deciding: the engine and its ledger are read once (the ledger is an immutable value)."""
        engine = self.service.engine
        ledger = engine.ledger
        return StateSample(
            exclusive_cpus=len(ledger.exclusive), pinned_cpus=len(ledger.pinned),
            shared_pool_cpus=len(engine.shared_pool()),
            containers=dict(Counter(entry.kind for entry in ledger.entries.values())),
            runtime_connected=self.session.connected, synchronized=self.service.synchronized,
            away_from_devices=away_by_kind(engine.topology, ledger.entries.values()))

    def status_inputs(self) -> state_view.StatusInputs:
        """What ``inspect`` shows, taken at once (cheap: see ``state_view``)."""
        runtime = self.handler.runtime
        return state_view.StatusInputs(
            committed=state_view.Committed.of(self.service.engine),
            runtime=f"{runtime.runtime_name} {runtime.runtime_version}" if runtime else "",
            synchronized=self.service.synchronized, known=self.service.pusher.known(),
            pending=self.service.pusher.pending(),
            records=self.service.pusher.record_pending(), history=self.service.history(),
            stats=self.service.statistics.snapshot(),
            kernel_drift={m.container_id: f"{m.describe()} (re-sent {sends}×)"
                          for m, sends in self.verifier.drifting()}
            if self.verifier is not None else {},
            quiet_applied=self.service.quiet.applied, quiet_notes=self._quiet_notes(),
            quiet_unmet=dict(self.service.quiet.unmet),
            quiet_idle_via=dict(last.idle_via) if (last := self.service.quiet.last) else {})

    def _quiet_notes(self) -> tuple[list[str], list[str]]:
        """The last quiet-CPU pass's skipped files and problems."""
        last = self.service.quiet.last
        return ([], []) if last is None else (list(last.skipped), list(last.problems))

    async def snapshot(self) -> bytes:
        """The live state document (``nri-cpuset inspect``), made a slice at a time so that
        the runtime's hooks, answered on this loop, never wait for a whole document."""
        pieces = []
        for piece in state_view.render_slices(self.status_inputs()):
            pieces.append(piece)
            await asyncio.sleep(0)
        return b"".join(pieces)
