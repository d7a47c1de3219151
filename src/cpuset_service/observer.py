"""The telemetry ports: what the service reports as it decides and updates (:class:`Observer`),
and what a runtime adapter reports about the calls it serves (:class:`HookObserver`); the no-op
defaults, and a fan-out of several observers.

Calls happen on the event loop, inside hooks, so an implementation must be fast and must not
block; it may be read from other threads (metrics scrapes, health probes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from cpuset_core import Kind

if TYPE_CHECKING:
    from cpuset_service.verification import Verdict

HookResult = Literal["ok", "error"]
AdmissionResult = Literal["admitted", "rejected"]
BatchOutcome = Literal["applied", "failed", "rolled_back"]
"""``applied``/``failed``: an update call succeeded or failed; ``rolled_back``: a call that
undid the steps of a failed staged transaction."""


class HookObserver(Protocol):
    """Receives the runtime calls a runtime adapter serves (metrics and health)."""

    def hook_started(self, hook: str, request_timeout_ms: int) -> int:
        """A runtime call (``hook``: e.g. the NRI method ``CreateContainer``) is being
        handled under the runtime's ``request_timeout_ms``; return a token for
        :meth:`hook_finished`."""
        ...

    def hook_finished(self, token: int, result: HookResult) -> None:
        """The call with ``token`` was answered."""
        ...


class Observer(Protocol):
    """Receives what the service decides and sends (statistics and metrics)."""

    def admission(self, kind: Kind, result: AdmissionResult, reason: str) -> None:
        """A creation decision; ``reason`` is the core error's ``reason`` for a rejection,
        ``""`` for an admission."""
        ...

    def response_updates(self, container_ids: Sequence[str], moves: int) -> None:
        """Live updates carried on an event response, one per id; ``moves`` of them move
        integer containers off pinned CPUs."""
        ...

    def update_batch(self, outcome: BatchOutcome, container_ids: Sequence[str]) -> None:
        """One update call the plugin made on its own, carrying these containers' updates."""
        ...

    def drift(self, repaired: int, unrepaired: int) -> None:
        """A rebuild found containers off their placement: ``repaired`` are corrected by its
        updates, ``unrepaired`` could not be."""
        ...

    def verified(self, verdict: Verdict) -> None:
        """A verifier pass compared the kernel with the ledger."""
        ...

    def not_running(self, kind: Kind, reason: str) -> None:
        """A container not seen to start was released because it will not run; ``reason`` is
        the start rule's (``cpuset_core.starts.NOT_RUNNING_REASONS``)."""
        ...

    def start_check_failed(self) -> None:
        """The runtime could not say whether containers not seen to start will run."""
        ...


class _NoObserver:
    """Observes nothing: the default, so tests and the dry run need no telemetry."""

    def hook_started(self, hook: str, request_timeout_ms: int) -> int:  # noqa: ARG002
        return 0

    def hook_finished(self, token: int, result: HookResult) -> None:
        pass

    def admission(self, kind: Kind, result: AdmissionResult, reason: str) -> None:
        pass

    def response_updates(self, container_ids: Sequence[str], moves: int) -> None:
        pass

    def update_batch(self, outcome: BatchOutcome, container_ids: Sequence[str]) -> None:
        pass

    def drift(self, repaired: int, unrepaired: int) -> None:
        pass

    def verified(self, verdict: Verdict) -> None:
        pass

    def not_running(self, kind: Kind, reason: str) -> None:
        pass

    def start_check_failed(self) -> None:
        pass


NO_OBSERVER: Observer = _NoObserver()
NO_HOOK_OBSERVER: HookObserver = _NoObserver()


class FanOut:
    """Reports to every observer in turn (the statistics and the metrics)."""

    def __init__(self, *observers: Observer) -> None:
        self._observers = observers

    def admission(self, kind: Kind, result: AdmissionResult, reason: str) -> None:
        for observer in self._observers:
            observer.admission(kind, result, reason)

    def response_updates(self, container_ids: Sequence[str], moves: int) -> None:
        for observer in self._observers:
            observer.response_updates(container_ids, moves)

    def update_batch(self, outcome: BatchOutcome, container_ids: Sequence[str]) -> None:
        for observer in self._observers:
            observer.update_batch(outcome, container_ids)

    def drift(self, repaired: int, unrepaired: int) -> None:
        for observer in self._observers:
            observer.drift(repaired, unrepaired)

    def verified(self, verdict: Verdict) -> None:
        for observer in self._observers:
            observer.verified(verdict)

    def not_running(self, kind: Kind, reason: str) -> None:
        for observer in self._observers:
            observer.not_running(kind, reason)

    def start_check_failed(self) -> None:
        for observer in self._observers:
            observer.start_check_failed()
