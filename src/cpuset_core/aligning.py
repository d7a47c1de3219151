"""The node's alignment policy applied to one exclusive choice (:mod:`cpuset_core.planner`):
the hint a container is placed by, and what breaks a strict policy in a choice
(:mod:`cpuset_core.policy.alignment` says what the policies are)."""

from __future__ import annotations

from dataclasses import replace

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import AlignmentError
from cpuset_core.ledger import Ledger
from cpuset_core.model import Kind
from cpuset_core.placing import Live
from cpuset_core.policy.alignment import AlignmentScope, misalignment
from cpuset_core.policy.shared import exclusive_free
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology


def hinted(topology: Topology, settings: Settings, working: Ledger, item: Live) -> Live:
    """``item`` with the hint the alignment policy gives it: none under ``none``; its
    devices' nodes, and under the ``pod`` scope also the nodes and devices of its pod's
    other integer containers."""
    options = settings.allocation
    near = item.decision.near if options.alignment.uses_devices else EMPTY
    if options.alignment_scope is AlignmentScope.POD and options.alignment.uses_devices:
        for entry in working.entries.values():
            if (entry.sandbox_id == item.facts.sandbox_id and entry.kind is Kind.INTEGER
                    and entry.container_id != item.facts.id):
                near |= topology.numa_nodes_of(entry.cpus) | entry.near
    if near == item.decision.near:
        return item
    return Live(item.facts, item.subject, replace(item.decision, near=near))


def misaligned(topology: Topology, settings: Settings, item: Live, cpus: CPUSet) -> str:
    """What breaks the alignment policy in giving ``cpus`` to ``item`` ("" if nothing)."""
    return misalignment(topology, settings.allocation.alignment, cpus,
                        near=item.decision.near,
                        eligible=exclusive_free(topology, EMPTY, settings))


def check_alignment(topology: Topology, settings: Settings, item: Live, cpus: CPUSet) -> None:
    """Refuses (``AlignmentError``) a choice a strict alignment policy does not allow."""
    if why := misaligned(topology, settings, item, cpus):
        raise AlignmentError(item.subject, settings.allocation.alignment.value,
                             len(cpus), why)
