"""Quiet CPUs as a use case (issue 43): an admission whose request the node cannot meet, refused
or let through as ``cpus.unmet_requests`` says, and the node made what the ledger's live
containers want (:func:`cpuset_core.quiet_state`) through a port, whenever that changes.

The service does no I/O here: the node's files are behind :class:`QuietNode` (the adapter
``cpuset_adapters.quiet.applier.QuietApplier``), as containers' cgroups are behind the kernel
fast path's updater.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from cpuset_core import (
    AdmissionError,
    CPUSet,
    Ledger,
    Plan,
    Quiet,
    QuietState,
    Unmet,
    quiet_state,
)


class QuietResult(Protocol):
    """What one pass over the node did (files written, put back, skipped, failed)."""

    @property
    def changed(self) -> Sequence[str]: ...
    @property
    def restored(self) -> Sequence[str]: ...
    @property
    def skipped(self) -> Sequence[str]: ...
    @property
    def problems(self) -> Sequence[str]: ...
    @property
    def idle_via(self) -> Mapping[int, str]:
        """CPU → the mechanism that carries its idle bound (the node's fact: ``inspect``)."""


class QuietNode(Protocol):
    """Port: the node's interrupts, idle states and governors."""

    def unmet(self, quiet: Quiet, cpus: CPUSet) -> list[str]:
        """Why ``quiet`` cannot be met on ``cpus`` here (empty: it can)."""

    def apply(self, state: QuietState, online: CPUSet) -> QuietResult:
        """Make the node what ``state`` wants, putting back what it no longer does."""


class QuietCpusUnavailableError(AdmissionError):
    """A container asked for quiet CPUs the node cannot give; refused under
    ``unmet_requests = "refuse"``."""

    reason = "quiet-cpus-unavailable"

    def __init__(self, subject: str, keys: Sequence[str], why: Sequence[str]) -> None:
        self.keys = tuple(keys)
        self.why = tuple(why)
        super().__init__(subject, f"asks for quiet CPUs ({', '.join(self.keys)}), which this "
                                  f"node cannot give: {'; '.join(self.why)}")


class QuietCpus:
    """The admission check and the wanted state; without a node, requests are kept in the
    ledger and nothing is written (dry runs, tests, a plugin that cannot reach the files)."""

    def __init__(self, node: QuietNode | None = None) -> None:
        self.node = node
        self.applied: QuietState | None = None
        """The state the node was last made (``None``: not yet, in this process)."""
        self.last: QuietResult | None = None
        """What that pass did (``inspect`` shows what it skipped and what failed)."""
        self.unmet: dict[str, str] = {}
        """Why each live container's request was not given (best effort), by container id."""

    def checked(self, plan: Plan, unmet: Unmet) -> Plan:
        """``plan``, its reason saying why the container's request cannot be met here when it
        cannot (best effort: admitted, its CPUs left as the node has them). Raises
        :class:`QuietCpusUnavailableError` for that under ``refuse``."""
        entry = plan.result.get(plan.container_id or "")
        if entry is None or entry.quiet is None or not entry.cpus or self.node is None:
            return plan
        why = self.node.unmet(entry.quiet, entry.cpus)
        if not why:
            return plan
        if unmet is Unmet.REFUSE:
            raise QuietCpusUnavailableError(entry.subject, entry.quiet.keys, why)
        self.unmet[entry.container_id] = "; ".join(why)
        return replace(plan, reason=f"{plan.reason}; quiet CPUs not given (best effort): "
                                    f"{'; '.join(why)}")

    def wanted(self, ledger: Ledger) -> QuietState | None:
        """The state the node must be made, or ``None`` when it already is."""
        state = quiet_state(ledger.entries.values())
        self.unmet = {cid: why for cid, why in self.unmet.items() if cid in ledger.entries}
        return None if state == self.applied else state

    def apply(self, state: QuietState, online: CPUSet) -> QuietResult | None:
        """Make the node ``state`` (``None`` without a node). Raises what the port raises; the
        state counts as applied only once it returned."""
        if self.node is None:
            return None
        result = self.node.apply(state, online)
        self.applied, self.last = state, result
        return result
