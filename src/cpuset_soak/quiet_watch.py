"""The host's quiet-CPU files as the soak watches them (``parts.QuietHost``): the snapshot taken
before the walk (under ``cpuset_lab.quiet_host.held``, which the soak holds for the whole walk),
the IRQs that accepted a write then, each idle state's exit latency, and the invariant
(``quiet_invariant``) checked against the files read now."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cpuset_core.cpuset import CPUSet
from cpuset_lab import quiet_host

from . import quiet_invariant
from .model import Node


def latencies(paths: list[Path]) -> dict[Path, int]:
    """Each idle state's exit latency (µs), read beside its ``disable`` file (one without it
    is left out: the invariant then expects its original)."""
    found = {}
    for path in paths:
        if path.name != "disable" or path.parent.parent.name != "cpuidle":
            continue
        try:
            found[path] = int((path.parent / "latency").read_text().strip())
        except (OSError, ValueError):
            continue
    return found


class QuietWatch:
    """The files as they were before the walk, and the check of what they are now."""

    def __init__(self) -> None:
        self.before = quiet_host.snapshot()
        self.accepting = frozenset(quiet_host.accepting(self.before))
        self.latency = latencies(list(self.before))

    def describe(self) -> str:
        idle = sum(1 for p in self.before if p.name == "disable")
        return (f"quiet CPUs watched: {len(self.accepting)} IRQs accepting a write, {idle} "
                f"idle states, {sum(p.name == 'scaling_governor' for p in self.before)} "
                f"governors (held: {quiet_host.LOCK})")

    def check(self, node: Node, cpus_of: Mapping[str, CPUSet]) -> list[str]:
        """The invariant on the files now, for ``node``'s running quiet containers."""
        return quiet_invariant.violations(
            self.before, quiet_host.snapshot(), accepting=self.accepting,
            latency=self.latency, online=node.online,
            want=quiet_invariant.wanted(node, cpus_of))

    def left_changed(self) -> list[str]:
        """Every file not as it was before the walk (its end: every pod gone)."""
        return [f"{path} is {now!r}, was {was!r} before the walk"
                for path, (was, now) in sorted(quiet_host.differences(self.before).items())]

    def put_back(self) -> list[str]:
        """Whatever differs put back (a walk stopped by a violation leaves pods running); what
        was put back, and what could not be."""
        changed = self.left_changed()
        failed = quiet_host.put_back(self.before)
        return [f"put back: {line}" for line in changed] + [f"not put back: {f}" for f in failed]
