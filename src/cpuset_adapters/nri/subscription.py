"""Which NRI events a plugin subscribes to: the events every runtime version accepts and the
``ConfigureResponse.events`` mask for a set of them (fact sheet §4.5)."""

from __future__ import annotations

from collections.abc import Iterable

from cpuset_adapters.nri.handler_port import Event

SUBSCRIBABLE_EVENTS = frozenset(e for e in Event if e <= Event.REMOVE_CONTAINER)
"""Events a handler may subscribe to. Runtimes before NRI v0.10 (containerd up to 2.1) refuse a
mask with higher bits and close the plugin (§4.5, §7), and this service does not serve the
UpdatePodSandbox and ValidateContainerAdjustment RPCs those events need."""


def subscription_mask(events: Iterable[Event]) -> int:
    """``ConfigureResponse.events`` for ``events``; raises ``ValueError`` for an empty set
    (0 would subscribe to *every* event) or one outside :data:`SUBSCRIBABLE_EVENTS`."""
    chosen = frozenset(events)
    if not chosen:
        raise ValueError("no events subscribed (an empty mask means every event to the runtime)")
    unsupported = chosen - SUBSCRIBABLE_EVENTS
    if unsupported:
        names = ", ".join(sorted(e.name for e in unsupported))
        raise ValueError(f"cannot subscribe to {names}: not every runtime version accepts it")
    mask = 0
    for event in chosen:
        mask |= event.bit
    return mask
