"""The port between the NRI session (protocol) and the handler (decisions): the
:class:`NriHandler` protocol, the :class:`Event` it subscribes to, the :class:`RuntimeInfo` it is
configured with, and :class:`HandlerError`.

The session calls every handler method on the event loop, one at a time, and answers the runtime
with what it returns. So the methods are synchronous, do no I/O, and are fast: the runtime's
request timeout (2 s by default) covers the whole round trip, and a late reply disconnects the
plugin and lets the container start without its cpuset (fact sheet §6.6).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cpuset_adapters.nri.proto import nri_pb2 as pb


class Event(enum.IntEnum):
    """NRI events (``nri.pkg.api.v1alpha1.Event``, §4.5); in the subscription mask, event ``e``
    is bit ``e - 1``."""

    RUN_POD_SANDBOX = 1
    STOP_POD_SANDBOX = 2
    REMOVE_POD_SANDBOX = 3
    CREATE_CONTAINER = 4
    POST_CREATE_CONTAINER = 5
    START_CONTAINER = 6
    POST_START_CONTAINER = 7
    UPDATE_CONTAINER = 8
    POST_UPDATE_CONTAINER = 9
    STOP_CONTAINER = 10
    REMOVE_CONTAINER = 11
    UPDATE_POD_SANDBOX = 12  # NRI v0.10.0+ (containerd 2.2+)
    POST_UPDATE_POD_SANDBOX = 13  # v0.10.0+
    VALIDATE_CONTAINER_ADJUSTMENT = 14  # v0.10.0+

    @property
    def bit(self) -> int:
        """This event's bit in ``ConfigureResponse.events``."""
        return 1 << (self.value - 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeInfo:
    """What the runtime said about itself in Configure."""

    config: str = ""
    """The plugin's drop-in config file content (pre-installed plugins), or ``""``."""
    runtime_name: str = ""
    runtime_version: str = ""
    nri_version: str = ""
    """The runtime's NRI version, e.g. ``"v0.12.2"``; ``""`` before NRI v0.12.0."""
    registration_timeout_ms: int = 0
    """0 when the runtime does not send it (before NRI v0.7.0; the default there is 5000)."""
    request_timeout_ms: int = 0
    """0 when the runtime does not send it (before NRI v0.7.0; the default there is 2000)."""


class HandlerError(Exception):
    """Raised by a handler to fail the event; the runtime reports ``message`` (for
    CreateContainer: the container is not created)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NriHandler(Protocol):
    """The decisions behind an NRI plugin session.

    Updates returned by a method ride on that event's response (never name the container being
    created in ``on_create_container``'s updates: the runtime then fails the creation, §6.1).
    """

    def subscribed_events(self) -> frozenset[Event]:
        """The events to receive; asked right after :meth:`on_configure`. Must be non-empty
        and within RUN_POD_SANDBOX..REMOVE_CONTAINER (every runtime version accepts those)."""
        ...

    def on_configure(self, info: RuntimeInfo) -> None:
        """The runtime configures the plugin (once per connection, before Synchronize).
        Raise :class:`HandlerError` to refuse (the connection is then dropped)."""
        ...

    def on_synchronize(self, pods: Sequence[pb.PodSandbox],
                       containers: Sequence[pb.Container]) -> Sequence[pb.ContainerUpdate]:
        """Every existing pod and container (all chunks together); return corrections."""
        ...

    def on_create_container(self, pod: pb.PodSandbox, container: pb.Container,
                            ) -> tuple[pb.ContainerAdjustment | None, Sequence[pb.ContainerUpdate]]:
        """Return the new container's adjustment and updates to *other* containers; raise
        :class:`HandlerError` to fail the creation."""
        ...

    def on_update_container(self, pod: pb.PodSandbox, container: pb.Container,
                            resources: pb.LinuxResources) -> Sequence[pb.ContainerUpdate]:
        """CRI UpdateContainerResources with the requested ``resources``; raise
        :class:`HandlerError` to fail the update."""
        ...

    def on_start_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        """The runtime starts the container (its task and cgroup exist, its process has not
        run yet); raise :class:`HandlerError` to fail the start (the runtime then stops it)."""
        ...

    def on_post_start_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        """The runtime started the container's task (when subscribed). Errors are logged; the
        runtime is answered OK regardless."""
        ...

    def on_post_update_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        """The runtime applied an update of the container (the kubelet's resize). Errors are
        logged; the runtime is answered OK regardless."""
        ...

    def on_stop_container(self, pod: pb.PodSandbox,
                          container: pb.Container) -> Sequence[pb.ContainerUpdate]:
        """The container stopped; return updates (e.g. freed CPUs for the others). Errors are
        logged and the runtime is answered OK regardless (§6.4)."""
        ...

    def on_remove_container(self, pod: pb.PodSandbox, container: pb.Container) -> None:
        """The container was removed (also after a failed creation, §6.1). Errors are logged;
        the runtime is answered OK regardless."""
        ...

    def on_pod_sandbox_gone(self, pod: pb.PodSandbox, *, removed: bool) -> None:
        """StopPodSandbox (``removed=False``) or RemovePodSandbox (``removed=True``), when
        subscribed. Errors are logged; the runtime is answered OK regardless."""
        ...

    def on_disconnect(self) -> None:
        """The runtime connection ended; state is rebuilt at the next Synchronize."""
        ...
