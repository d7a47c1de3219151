"""Drift: where the runtime's report of a container's cpuset differs from the ledger.

After every synchronize (NRI Synchronize, or the CRI inventory), each reported container is
compared with the placement the synchronized ledger gives it:

* **repaired** — it differs, and the synchronize plan corrects it to a placement made by its
  own rule (the correction rides on the response, or is applied as a staged transaction);
* **unrepaired** — it differs, and no correction brings it where its rule wants it: nothing
  valid to move it to (an empty shared pool), the synchronize reported a problem for it (a pin
  on an offline CPU, an integer container that no longer fits), its pod is unknown (no rule
  applies; it is only kept off reserved CPUs), or the correction failed to apply.

Containers whose report matches are not drift. Pure: the adapters count and log the result.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.model import ContainerFacts, PodFacts, parse_reported
from cpuset_core.plan import Plan


@dataclass(frozen=True, slots=True, kw_only=True)
class Drifted:
    """One container whose reported cpuset differs from the ledger's placement."""

    container_id: str
    subject: str
    reported: str
    """The cpuset as the runtime reported it (``""`` when unset)."""
    expected: CPUSet
    """Where the ledger places it (empty when there is nowhere valid)."""
    why: str = ""
    """For unrepaired drift: why it could not be repaired."""


@dataclass(frozen=True, slots=True)
class DriftReport:
    """The drift one synchronize found."""

    repaired: tuple[Drifted, ...] = ()
    unrepaired: tuple[Drifted, ...] = ()

    def with_failed(self, container_ids: Collection[str], why: str) -> DriftReport:
        """The report once the corrections of ``container_ids`` failed to apply: those move
        from repaired to unrepaired."""
        failed = tuple(replace(d, why=why) for d in self.repaired
                       if d.container_id in container_ids)
        if not failed:
            return self
        kept = tuple(d for d in self.repaired if d.container_id not in container_ids)
        return DriftReport(kept, (*self.unrepaired, *failed))


def assess(plan: Plan, pods: Iterable[PodFacts],
           containers: Iterable[ContainerFacts]) -> DriftReport:
    """Compare what the runtime reported (``pods``, ``containers``: the synchronize's input)
    with the ledger ``plan`` produces, and sort each difference into repaired or unrepaired."""
    known_pods = {pod.sandbox_id for pod in pods}
    corrected = {update.container_id for update in plan.moves}
    problems = {problem.subject: problem.reason for problem in plan.problems}
    repaired: list[Drifted] = []
    unrepaired: list[Drifted] = []
    for facts in sorted(containers, key=lambda c: c.id):
        entry = plan.result.get(facts.id)
        if entry is None:
            continue  # not adopted (a synchronize adopts every reported container)
        expected = entry.runs_on(plan.shared_pool, plan.reserved_pool)
        mems_differ = (entry.mems is not None
                       and parse_reported(facts.mems) != entry.mems)
        if parse_reported(facts.cpus) == expected and not mems_differ:
            continue
        drifted = Drifted(container_id=facts.id, subject=entry.subject, reported=facts.cpus,
                          expected=expected)
        why = _unrepaired_because(facts, expected, known_pods=known_pods,
                                  corrected=corrected, problem=problems.get(entry.subject))
        if why:
            unrepaired.append(replace(drifted, why=why))
        else:
            repaired.append(drifted)
    return DriftReport(tuple(repaired), tuple(unrepaired))


def _unrepaired_because(facts: ContainerFacts, expected: CPUSet, *, known_pods: set[str],
                        corrected: set[str], problem: str | None) -> str:
    """Why a drifted container is not repaired (``""`` when it is)."""
    if expected == EMPTY:
        return "no CPU to move it to (the shared pool is empty)"
    if problem is not None:
        return problem
    if facts.sandbox_id not in known_pods:
        return "its pod is unknown"
    if facts.id not in corrected:
        return "no correction was planned"
    return ""
