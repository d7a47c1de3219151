"""Quiet CPUs in the live state document (issue 43): per container, what it asked (its keys and
their meaning) and what became of it (given, not given and why, or waiting for the daemon's next
pass); for the node, what its last pass made quiet and what it skipped or failed. ``inspect``
and ``explain`` render them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeVar

from cpuset_adapters.quiet.idle import NONE, PM_QOS
from cpuset_core import CPUSet, Entry, QuietState

GIVEN: Final = "given"
NOT_GIVEN_STATE: Final = "not given"
PENDING: Final = "pending"

_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class QuietView:
    """One container's quiet-CPU request and what became of it."""

    keys: list[str]
    """The annotations that asked, in the order they were read."""
    asks: str
    """What they ask, in words (``interrupts off, idle states over 0 µs off``)."""
    state: str
    """``given`` (the node's last pass made its CPUs so), ``not given`` (``why`` says why:
    this node cannot, best effort) or ``pending`` (no pass since it was admitted)."""
    why: str = ""
    applied: str = ""
    """What the last pass holds on its CPUs (``interrupts off 3; idle states past 0 µs
    disabled on 3``, or ``resume latency ≤ 0 µs (PM QoS) on 3`` where that carried it)."""


@dataclass(frozen=True, slots=True)
class NodeQuietView:
    """What the daemon's last pass over the node's files left: the CPUs made quiet and what
    could not be done (empty before the first pass, or with quiet CPUs off)."""

    irq_cpus: str = ""
    idle_limits: dict[str, int] = field(default_factory=dict)
    """CPU → the exit latency (µs) past which its idle states are disabled."""
    idle_via: dict[str, str] = field(default_factory=dict)
    """CPU → what carries that bound: ``cpuidle`` (its states' ``disable``), ``pm-qos`` (its
    PM QoS resume latency: a process without CAP_SYS_ADMIN), ``none`` (neither could be
    written). Absent: ``cpuidle`` (a daemon of before the PM QoS fallback)."""
    governors: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def container_quiet(cid: str, entry: Entry, applied: QuietState | None,
                    unmet: str = "", idle_via: Mapping[int, str] | None = None,
                    ) -> QuietView | None:
    """``entry``'s request and what became of it (``unmet``: why the node could not give it,
    as its admission found; ``idle_via``: what carried each CPU's idle bound, the last pass's
    report); ``None`` when it asked nothing kept (a container without exclusive CPUs: its
    reason says its request was ignored)."""
    quiet = entry.quiet
    if quiet is None:
        return None
    keys, asks = list(quiet.keys), quiet.describe()
    if unmet:
        return QuietView(keys=keys, asks=asks, state=NOT_GIVEN_STATE, why=unmet)
    held = _held_by(cid, applied, idle_via or {})
    if applied is None or not held:
        return QuietView(keys=keys, asks=asks, state=PENDING)
    return QuietView(keys=keys, asks=asks, state=GIVEN, applied=held)


def _held_by(cid: str, applied: QuietState | None, idle_via: Mapping[int, str]) -> str:
    """What ``applied`` keeps on the CPUs ``cid`` holds quiet, in words ("": nothing)."""
    if applied is None:
        return ""
    irqs = CPUSet(cpu for cpu, q in applied.cpus.items() if cid in q.irqs)
    idle = {cpu: q.idle_limit for cpu, q in applied.cpus.items()
            if cid in q.idle and q.idle_limit is not None}
    governors = {cpu: q.governor for cpu, q in applied.cpus.items() if cid in q.governors}
    parts = [f"interrupts off {irqs}"] if irqs else []
    parts += [idle_bound(limit, str(cpu), idle_via.get(cpu, "")) for cpu, limit in idle.items()]
    parts += [f"governor {governor} on {cpu}" for cpu, governor in governors.items()]
    return "; ".join(parts)


def idle_bound(limit: int, cpu: str, via: str) -> str:
    """One CPU's idle bound in words, by what carried it."""
    if via == PM_QOS:
        return f"resume latency ≤ {limit} µs (PM QoS) on {cpu}"
    if via == NONE:
        return f"idle bound {limit} µs not carried on {cpu}"
    return f"idle states past {limit} µs disabled on {cpu}"


def node_quiet(applied: QuietState | None, skipped: Sequence[str] = (),
               problems: Sequence[str] = (),
               idle_via: Mapping[int, str] | None = None) -> NodeQuietView:
    """The node's view from the last applied state and that pass's notes."""
    if applied is None:
        return NodeQuietView(skipped=list(skipped), problems=list(problems))
    return NodeQuietView(irq_cpus=applied.irq_cpus.format(),
                         idle_limits=_by_cpu(applied.idle_limits()),
                         idle_via=_by_cpu({cpu: via for cpu, via in (idle_via or {}).items()
                                           if cpu in applied.idle_limits()}),
                         governors=_by_cpu(applied.governors()),
                         skipped=list(skipped), problems=list(problems))


def _by_cpu(values: Mapping[int, _V]) -> dict[str, _V]:
    return {str(cpu): value for cpu, value in sorted(values.items())}


def text_lines(quiet: QuietView) -> list[str]:
    """``explain``'s lines for a container's request."""
    lines = [f"  quiet: {quiet.asks} ({', '.join(quiet.keys)}): {quiet.state}"]
    if quiet.state == GIVEN:
        lines.append(f"         {quiet.applied}")
    elif quiet.state == NOT_GIVEN_STATE:
        lines.append(f"         why: {quiet.why}")
    else:
        lines.append("         the daemon's next pass over the node's files makes it so")
    return lines


def summary(quiet: QuietView) -> str:
    """``inspect``'s one cell for a container's request."""
    return quiet.state if quiet.state != NOT_GIVEN_STATE else f"not given: {quiet.why}"


def node_lines(node: NodeQuietView) -> list[str]:
    """``inspect``'s and ``explain``'s lines for the node (none when nothing is quiet or
    went wrong)."""
    lines = []
    quiet = [f"interrupts off {node.irq_cpus}"] if node.irq_cpus else []
    quiet += [idle_bound(limit, cpu, node.idle_via.get(cpu, ""))
              for cpu, limit in node.idle_limits.items()]
    quiet += [f"governor {gov} on {cpu}" for cpu, gov in node.governors.items()]
    if quiet:
        lines.append(f"quiet CPUs: {'; '.join(quiet)}")
    lines += [f"quiet CPUs skipped: {note}" for note in node.skipped]
    lines += [f"quiet CPUs problem: {note}" for note in node.problems]
    return lines
