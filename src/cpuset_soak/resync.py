"""What a Synchronize decides again, as the model follows it: the plugin or the runtime
restarted (or the plugin reconnected after a stop), and the plugin rebuilt its state from what
the runtime reports (``cpuset_core.sync``)."""

from __future__ import annotations

from .model import INTEGER, MIXED, PINNED, SHARED, Node
from .prediction import UNAVAILABLE


def resynchronized(node: Node) -> None:
    """A Synchronize (the plugin or the runtime restarted) decides everything again:
    a running pin from a namespace no longer allowed goes to the shared pool
    (docs/operations.md, config reload), one allowed again is pinned again; integer
    containers keep their CPUs in the order of their ids while a shared pool is left,
    and the rest run shared (``cpuset_core.sync``: shared containers created while the
    plugin was away must not run on exclusive CPUs); a mixed one keeps its CPUs only with
    a pool beside them (it runs there too). Containers on the reserved CPUs stay there (the
    walk never takes a reserved CPU offline, nor narrows the namespaces that asked)."""
    for pod in node.pods.values():
        if pod.annotation is None:
            continue
        pin, reasons = node.pin_refusals(pod)
        # A running pin with an offline CPU keeps its online part (none: it runs shared;
        # the walk never takes a pin's last online CPU).
        reasons.discard(UNAVAILABLE)
        pod.pin = None if reasons or pin is None or not pin & node.online else pin
        kind = SHARED if pod.pin is None else PINNED
        for container in pod.containers.values():
            container.kind = kind
    integers = sorted((c for c in node.running() if c.cpus and c.kind != PINNED),
                      key=lambda c: c.cid)
    # Those in the list running shared now count again as what they ask; mixed ones, kept
    # shared or not, count on the pool either way.
    shared = node.shared_count() - sum(c.kind == SHARED and not c.mixed for c in integers)
    for container in integers:
        container.kind = SHARED  # decided below, in the rebuild's order
    pins, kept = node.pins(), 0
    for container in integers:
        fits = node.pool_count(pins, kept + container.cpus) >= 1
        if fits or (not shared and not container.mixed):
            container.kind = MIXED if container.mixed else INTEGER
            kept += container.cpus
