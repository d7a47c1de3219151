"""What the runtime (over CRI) and the kernel (cgroupfs) say of containers the plugin has not
seen start: the service's :class:`~cpuset_service.starts.StartProbe`.

containerd reports a container whose task could not be created as ``CONTAINER_EXITED`` with
the reason ``StartError`` and the runtime's message, and sends no NRI event; one created and
not started as ``CONTAINER_CREATED`` with the time it was created. The kernel's word comes
first (``cpuset_core.starts``): processes in its cgroup keep its CPUs (its task is being
created, or it runs).

The CRI client (h2, hpack, the CRI messages: about 2 MiB resident) is imported at the first
call, not with this module: on a healthy node no container waits long enough to be asked
about, so the daemon at rest never holds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from cpuset_adapters.cgroupfs import CgroupReader
from cpuset_adapters.cri.transport import CriError
from cpuset_core import RuntimeState, StartReport

if TYPE_CHECKING:
    from cpuset_adapters.cri.client import CriClient
    from cpuset_adapters.cri.results import ContainerStatus

STATES: Final = {"CONTAINER_CREATED": RuntimeState.CREATED,
                 "CONTAINER_RUNNING": RuntimeState.RUNNING,
                 "CONTAINER_EXITED": RuntimeState.EXITED,
                 "CONTAINER_UNKNOWN": RuntimeState.UNKNOWN}
TIMEOUT: Final = 1.0
"""Seconds each CRI call may take: a refusal for room waits for them (inside the runtime's
own request timeout, 2 s by default), and a runtime that slow cannot tell in time anyway."""

Client = Callable[[str], "CriClient"]
"""Opens a CRI client on a socket path."""


class CriStartProbe:
    """Reads containers' state over CRI at ``cri_socket`` and their cgroups with ``cgroups``
    (blocking: run it off the event loop, or on a refusal's path only)."""

    def __init__(self, cri_socket: str, cgroups: CgroupReader, *, timeout: float = TIMEOUT,
                 clock: Callable[[], float] = time.time, client: Client | None = None) -> None:
        self.cri_socket = cri_socket
        """Where CRI is served (a pre-installed plugin's runtime config may change it)."""
        self._client = client or (lambda socket: _open(socket, timeout))
        self._cgroups = cgroups
        self._clock = clock

    def reports(self, cgroup_paths: Mapping[str, str]) -> dict[str, StartReport]:
        """One report per container id; raises ``CriError`` (the runtime did not answer) or
        ``OSError`` (a cgroup that exists could not be read): then nothing is decided."""
        with self._client(self.cri_socket) as client:
            return {cid: self._report(client, cid, path) for cid, path in cgroup_paths.items()}

    def _report(self, client: CriClient, container_id: str, cgroups_path: str) -> StartReport:
        try:
            status = client.container_status(container_id, verbose=False)
        except CriError as exc:
            if exc.code_name != "NOT_FOUND":
                raise
            return StartReport(state=None, has_tasks=self._cgroups.has_tasks(cgroups_path))
        # Read after the runtime's answer: a task created in between is seen running.
        has_tasks = self._cgroups.has_tasks(cgroups_path)
        age = self._clock() - status.created_at / 1e9 if status.created_at else 0.0
        return StartReport(state=STATES.get(status.state, RuntimeState.UNKNOWN),
                           age=max(age, 0.0), has_tasks=has_tasks, detail=_detail(status))


def _open(cri_socket: str, timeout: float) -> CriClient:
    from cpuset_adapters.cri.client import CriClient  # noqa: PLC0415 - see the module's note

    return CriClient(cri_socket, timeout=timeout)


def _detail(status: ContainerStatus) -> str:
    """The runtime's words on a container that did not run (``StartError: <message>``)."""
    if status.state not in ("CONTAINER_EXITED", "CONTAINER_UNKNOWN"):
        return ""
    return ": ".join(part for part in (status.reason, status.message.strip()) if part)
