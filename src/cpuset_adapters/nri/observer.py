"""The telemetry port of the NRI adapter: what the session, handler and update paths report as
they work (:class:`Observer`), and the no-op default (:data:`NO_OBSERVER`).

Calls happen on the event loop, inside hooks, so an implementation must be fast and must not
block; it may be read from other threads (metrics scrapes, health probes).
"""

from __future__ import annotations

from typing import Literal, Protocol

from cpuset_core import Kind

HookResult = Literal["ok", "error"]
AdmissionResult = Literal["admitted", "rejected"]
BatchOutcome = Literal["applied", "failed", "rolled_back"]
"""``applied``/``failed``: an UpdateContainers call succeeded or failed; ``rolled_back``: a call
that undid the steps of a failed staged transaction."""


class Observer(Protocol):
    """Receives what the NRI adapter does, for metrics and health."""

    def hook_started(self, hook: str, request_timeout_ms: int) -> int:
        """A runtime call (``hook``: the NRI method, e.g. ``CreateContainer``) is being
        handled under the runtime's ``request_timeout_ms``; return a token for
        :meth:`hook_finished`."""
        ...

    def hook_finished(self, token: int, result: HookResult) -> None:
        """The call with ``token`` was answered."""
        ...

    def admission(self, kind: Kind, result: AdmissionResult, reason: str) -> None:
        """A CreateContainer decision; ``reason`` is the core error's ``reason`` for a
        rejection, ``""`` for an admission."""
        ...

    def response_updates(self, updates: int, moves: int) -> None:
        """Live updates carried on an event response; ``moves`` of them move integer
        containers off pinned CPUs."""
        ...

    def update_batch(self, outcome: BatchOutcome, updates: int) -> None:
        """One UpdateContainers call the plugin made on its own, carrying ``updates``."""
        ...


class _NoObserver:
    """Observes nothing: the default, so tests and the dry run need no telemetry."""

    def hook_started(self, hook: str, request_timeout_ms: int) -> int:  # noqa: ARG002
        return 0

    def hook_finished(self, token: int, result: HookResult) -> None:
        pass

    def admission(self, kind: Kind, result: AdmissionResult, reason: str) -> None:
        pass

    def response_updates(self, updates: int, moves: int) -> None:
        pass

    def update_batch(self, outcome: BatchOutcome, updates: int) -> None:
        pass


NO_OBSERVER: Observer = _NoObserver()
