"""The CRI inventory: for a pre-installed plugin on a runtime that never synchronizes it
(containerd 1.7, NRI < v0.7), every live pod and container read over CRI and adopted like a
Synchronize, its corrections applied as one staged transaction."""

from __future__ import annotations

import asyncio
import logging

from cpuset_core import ContainerFacts, PodFacts, UpdateTransactionError
from cpuset_service.placement import PlacementService
from cpuset_service.pusher import Sender
from cpuset_service.staged import apply_staged

_log = logging.getLogger("nri_cpuset.daemon")

ATTEMPTS = 60


class CriInventory:
    """Reads the runtime's pods and containers over CRI at ``cri_socket`` (retrying until it
    serves CRI) and hands them to the service; ``send`` applies the corrections."""

    def __init__(self, service: PlacementService, send: Sender, cri_socket: str, *,
                 attempts: int = ATTEMPTS) -> None:
        self._service = service
        self._send = send
        self._cri_socket = cri_socket
        self._attempts = attempts

    async def take(self) -> None:
        """Read every live pod and container over CRI (retrying until containerd serves CRI),
        adopt them like a Synchronize, and apply the corrections as one staged transaction."""
        loop = asyncio.get_running_loop()
        delay = 0.1
        failures = 0
        while failures < self._attempts:
            # Looked up at every attempt: a reload before the first decision replaces the
            # engine, and containers decided on the new one must be in the adoption.
            engine = self._service.engine
            before = engine.ledger
            try:
                pods, containers = await loop.run_in_executor(None, _read_inventory,
                                                              self._cri_socket)
            except Exception as exc:  # noqa: BLE001 - CRI not up yet, or gone: retry
                failures += 1
                _log.info("CRI inventory not available yet (%s); retrying in %.1f s", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            if self._service.engine is not engine or engine.ledger is not before:
                # Events were decided while reading: the snapshot may miss them. Not a
                # failure (a busy node would otherwise exhaust the attempts); pause briefly.
                await asyncio.sleep(0.05)
                continue
            # containerd calls NRI CreateContainer before the container enters its CRI store:
            # one admitted just before the read is missing from it and keeps its placement.
            plan = self._service.synchronize(pods, containers, source="CRI inventory",
                                             caller_applies=True, keep_unlisted=True).plan
            failure = ""
            try:
                await apply_staged(self._send, plan.updates, "CRI inventory",
                                   observer=self._service.observer)
            except UpdateTransactionError as exc:
                _log.error("%s; retrying from the background", exc)
                failure = str(exc)
            self._service.corrections_applied(plan, pods, containers, source="CRI inventory",
                                             failure=failure)
            return
        _log.error("no CRI inventory after %d attempts: containers that were running before "
                   "this plugin started are unknown to it", self._attempts)


def _read_inventory(cri_socket: str) -> tuple[list[PodFacts], list[ContainerFacts]]:
    # Imported here: CRI (h2, the CRI messages) is only needed on this path. The default
    # transport is h2_unary: the daemon never imports grpc (decision 35).
    from cpuset_adapters.cri.client import CriClient  # noqa: PLC0415
    from cpuset_adapters.cri.inventory import read_inventory  # noqa: PLC0415

    with CriClient(cri_socket, timeout=5.0) as client:
        return read_inventory(client)
