"""What ``/healthz`` and ``/readyz`` answer, from plain facts (no I/O, any thread).

* health fails only when the event loop is stuck: a runtime call has been in flight for longer
  than twice the runtime's request timeout (the runtime gave up on it long ago);
* readiness holds only while registered with the runtime and synchronized (the state was
  rebuilt from the runtime's Synchronize, or from the CRI inventory on containerd 1.7's
  pre-installed plugins).
"""

from __future__ import annotations

from collections.abc import Sequence

from cpuset_adapters.observability.hooks import STUCK_FACTOR, InFlight
from cpuset_adapters.observability.http import Probe


def health(stuck: Sequence[tuple[InFlight, float]]) -> Probe:
    """``stuck``: the calls in flight for too long, with how long each has been running."""
    if not stuck:
        return Probe(ok=True, detail="ok")
    call, running = max(stuck, key=lambda s: s[1])
    return Probe(ok=False, detail=f"event loop stuck: {call.hook} in flight for {running:.1f} s "
                                  f"(limit {STUCK_FACTOR * call.timeout_s:.1f} s, "
                                  f"{STUCK_FACTOR:g}x the request timeout)")


def readiness(*, registered: bool, synchronized: bool) -> Probe:
    if not registered:
        return Probe(ok=False, detail="not registered with the runtime")
    if not synchronized:
        return Probe(ok=False, detail="registered, not synchronized yet")
    return Probe(ok=True, detail="ready: registered and synchronized")
