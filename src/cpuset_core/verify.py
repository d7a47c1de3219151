"""Verification: where what the kernel enforces on a container differs from the ledger.

The runtime applies live updates without reporting their failures (an update to a container
being started is dropped), and anyone with access to cgroupfs can change a cpuset behind the
plugin's back. So the plugin reads each container's cgroup (an adapter does: the core does no
I/O) and this module compares it with the committed ledger:

* ``cpus`` — the cgroup's CPUs differ from the placement (the shared pool for a shared
  container, its own CPUs otherwise);
* ``mems`` — a container whose placement sets memory nodes (a pin) has others;
* ``quota`` — a container whose CFS quota the plugin lifts (issue 44: exclusive CPUs under
  ``exclusive_cpu_quota = "unlimited"``) has one in the kernel again: every runtime update
  rewrites the quota from the runtime's record, which keeps the kubelet's;
* ``unreadable`` — its cgroup could not be read (gone, or not where the runtime said).

A container whose cgroup does not name its CPUs (cgroup v2 leaves ``cpuset.cpus`` empty to
inherit) is judged by what the kernel applies (the effective set): the adapter reports that.
Pure: the service counts, logs and repairs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.ledger import Ledger
from cpuset_core.quota import UNLIMITED

Cause = Literal["cpus", "mems", "quota", "unreadable"]
CAUSES: tuple[Cause, ...] = ("cpus", "mems", "quota", "unreadable")


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """What the kernel enforces on one container (``cpus is None``: it could not be read,
    ``problem`` says why)."""

    cpus: CPUSet | None
    mems: CPUSet | None = None
    cfs_quota: int | None = None
    """The CFS quota in the kernel (:data:`~cpuset_core.quota.UNLIMITED`: none; ``None``:
    not read)."""
    problem: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Mismatch:
    """One container whose cgroup differs from its placement."""

    container_id: str
    subject: str
    cause: Cause
    expected_cpus: CPUSet
    observed_cpus: CPUSet | None
    expected_mems: CPUSet | None = None
    observed_mems: CPUSet | None = None
    observed_quota: int | None = None
    problem: str = ""

    def describe(self) -> str:
        """``expected -> observed`` for people (``unreadable: <why>`` when it could not be
        read)."""
        if self.cause == "unreadable":
            return f"unreadable: {self.problem}"
        if self.cause == "mems":
            return f"mems {self.expected_mems} expected, {self.observed_mems} enforced"
        if self.cause == "quota":
            return f"no cfs quota expected, {self.observed_quota} enforced"
        return f"cpus {self.expected_cpus} expected, {self.observed_cpus} enforced"


def mismatches(ledger: Ledger, shared_pool: CPUSet, observed: Mapping[str, Observed],
               reserved_pool: CPUSet = EMPTY, unthrottled: Collection[str] = ()
               ) -> list[Mismatch]:
    """Every container of ``ledger`` that ``observed`` covers and whose cgroup differs from
    its placement, by container id; those in ``unthrottled`` must also run without CFS quota
    (where it was read). Containers ``observed`` does not cover are not judged."""
    found: list[Mismatch] = []
    for cid in sorted(observed.keys() & ledger.entries.keys()):
        entry = ledger.entries[cid]
        seen = observed[cid]
        cpus = entry.runs_on(shared_pool, reserved_pool)
        cause = _cause(cpus, entry.mems, seen)
        if cause is None and cid in unthrottled and seen.cfs_quota not in (None, UNLIMITED):
            cause = "quota"
        if cause is not None:
            found.append(Mismatch(container_id=cid, subject=entry.subject, cause=cause,
                                  expected_cpus=cpus, observed_cpus=seen.cpus,
                                  expected_mems=entry.mems, observed_mems=seen.mems,
                                  observed_quota=seen.cfs_quota, problem=seen.problem))
    return found


def _cause(cpus: CPUSet, mems: CPUSet | None, seen: Observed) -> Cause | None:
    if seen.cpus is None:
        return "unreadable"
    if seen.cpus != cpus:
        return "cpus"
    if mems is not None and seen.mems != mems:
        return "mems"
    return None
