"""What the soak prints: a violation's report (seed, step, the last 30 operations, the
kernel's view and the model's), the plugin's memory and descriptors over the run, and the
closing line."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Final

from .kernel import KernelView
from .model import Node
from .record import Record, Tally

FD_SLACK: Final = 3
"""Descriptors a plugin may hold at the end beyond the fewest it held at a settle (a
reconnect in flight, a status client) before it counts as a leak."""


def violation(record: Record, model: Node, when: str, view: KernelView, *, seed: int,
              history: Path) -> None:
    """What was found (``record.found``) at ``record.step``, the last operations and their
    outcomes, and each running container as the kernel and the model see it."""
    out = sys.stdout
    print(f"\n=== VIOLATION {when}, seed {seed}, step {record.step}", file=out)
    for text in record.found:
        print(f"  - {text}", file=out)
    print("--- the last 30 operations and outcomes:", file=out)
    for line in record.recent:
        print(line, file=out)
    print("--- the kernel's view (cgroup cpus/mems; process cpus) and the model's:", file=out)
    for container in model.running():
        seen = view.get(container.cid)
        enforced = (f"cpus {seen.cpus} mems {seen.mems} process {seen.process_cpus}"
                    if seen else "no cgroup")
        flags = " ".join(f for f, on in (("unmanaged", container.unmanaged),
                                        ("runc-refusing", container.faulted)) if on)
        pin = model.pods[container.pod].pin
        print(f"  {container.pod}/{container.name} {container.kind}"
              f"{f' x{container.cpus}' if container.cpus else ''}"
              f"{f' pin {pin}' if pin is not None else ''} {container.cid[:12]}: "
              f"{enforced} {flags}", file=out)
    print(f"--- replay: python -m cpuset_soak --replay {history} "
          f"(kept; the plugin's log is beside it)", file=out, flush=True)


def descriptor_growth(memory: list[tuple[int, int, int]]) -> list[str]:
    """A leak of open descriptors: the plugin holds more at the end, with every pod gone,
    than the fewest any of its processes held at a settle (plus :data:`FD_SLACK`). Every
    process runs the same configuration, so a restart does not excuse a leak."""
    if not memory:
        return []
    fewest, last = min(fds for _, _, fds in memory), memory[-1][2]
    if last > fewest + FD_SLACK:
        return [f"the plugin's open descriptors grew from {fewest} to {last}"]
    return []


def memory_line(memory: list[tuple[int, int, int]]) -> str:
    if not memory:
        return "plugin RSS: not measured"
    rss = [kib for _, kib, _ in memory]
    fds = [n for _, _, n in memory]
    processes = len({pid for pid, _, _ in memory})
    return (f"plugin RSS start/peak/end {rss[0] / 1024:.1f}/{max(rss) / 1024:.1f}/"
            f"{rss[-1] / 1024:.1f} MiB, open fds start/peak/end {fds[0]}/{max(fds)}/{fds[-1]} "
            f"({processes} plugin process(es), {len(memory)} samples)")


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "none"


def closing(tally: Tally, minutes: float, seed: int, steps: int) -> str:
    operations = sum(v for k, v in tally.ops.items()
                     if k not in ("status-read", "lost-at-containerd-restart"))
    return (f"soak: seed {seed}, {minutes:.1f} min, {steps} steps, {operations} operations, "
            f"faults {sum(tally.faults.values())} ({_counts(tally.faults)}), "
            f"{tally.checks} checks, {len(tally.violations)} violations")


def settle_line(settles: list[float]) -> str:
    """How often the eventual invariants held at the first view after a step (0.3 s) and
    how long the others took: what the verifier and the plugin's answers had to repair."""
    if not settles:
        return "settled: no step"
    waited = [s for s in settles if s > 0.5]
    return (f"settled {len(settles)} steps: {len(settles) - len(waited)} at the first view, "
            f"{len(waited)} after waiting (longest {max(settles):.1f} s)")


def summary(tally: Tally) -> list[str]:
    return [f"operations by kind: {_counts(tally.ops)}",
            f"containers created one by one and admitted, by kind: {_counts(tally.admitted)}",
            f"refusals by reason: {_counts(tally.refusals)}",
            settle_line(tally.settles), memory_line(tally.memory),
            f"quiet-CPU checks of the host's files: {tally.quiet_checks}"]
