"""The quiet loop's repairs (issue 43): files found changed back since the pass that wrote
them (irqbalance moving an interrupt onto a quiet CPU, a driver re-requesting its IRQ, a
hotplug, a hand) and rewritten by a pass whose wanted state had not changed; an irqbalance
started since is told in such a pass too. Each repair is logged, counted by what it was, and
told to the containers that hold those CPUs quiet (a Kubernetes Event each)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final

from cpuset_adapters.quiet.idle import PM_QOS_FILE
from cpuset_core import CPUSet, QuietState
from cpuset_service.notices import Notices

_log = logging.getLogger("nri_cpuset.quiet")

WHATS: Final = ("irq", "idle", "governor", "irqbalance")
"""What a repair rewrote: an IRQ affinity (or the default one), an idle state's ``disable``
or a CPU's PM QoS resume latency, a governor, a running irqbalance told again or told for the
first time."""


def what_of(changed: str) -> str:
    """Which of :data:`WHATS` a pass's changed entry (a file path, or ``irqbalance PID: ...``)
    is."""
    if changed.startswith("irqbalance"):
        return "irqbalance"
    if "/cpuidle/" in changed or changed.endswith(PM_QOS_FILE):
        return "idle"
    if "/cpufreq/" in changed:
        return "governor"
    return "irq"


def holders(state: QuietState, what: str) -> dict[str, CPUSet]:
    """The containers (ids) holding CPUs quiet for ``what``, each with those CPUs."""
    held: dict[str, set[int]] = {}
    for cpu, wanted in state.cpus.items():
        ids = wanted.idle if what == "idle" else (
            wanted.governors if what == "governor" else wanted.irqs)
        for cid in ids:
            held.setdefault(cid, set()).add(cpu)
    return {cid: CPUSet(cpus) for cid, cpus in held.items()}


def tell_repairs(state: QuietState, changed: Sequence[str], notices: Notices,
                 count: Callable[[str, int], None]) -> dict[str, list[str]]:
    """Log, count and tell the repairs of one pass that kept ``state``; return them by what."""
    found: dict[str, list[str]] = {}
    for entry in changed:
        found.setdefault(what_of(entry), []).append(entry)
    for what, entries in found.items():
        count(what, len(entries))
        _log.warning("quiet CPUs repaired", extra={
            "what": what, "repaired": len(entries), "files": "; ".join(entries),
            "irq_cpus": str(state.irq_cpus)})
        notices.quiet_repaired(holders(state, what), what, entries)
    return found
