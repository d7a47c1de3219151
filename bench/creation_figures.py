"""An integer pod's creation as the benchmarks time it (CRI RunPodSandbox, CreateContainer,
StartContainer) and how its figures are printed: each phase's p50 and range, and a plugin's
beside its floor's (``bench/creation.py``: a no-op plugin; ``bench/record_pace.py``: no plugin).
No I/O here.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PHASES = ("runp", "create", "start", "total")
RESAMPLES = 2000
"""Bootstrap resamples behind each interval printed (a fixed seed: the same samples print the
same interval)."""


@dataclass
class Creation:
    """One integer pod, in seconds: its RunPodSandbox, CreateContainer and StartContainer
    (each as its caller saw it), and how many shared containers were on its CPUs when its start
    returned."""

    runp: float
    create: float
    start: float
    sharing: int

    @property
    def total(self) -> float:
        """runp + create + start."""
        return self.runp + self.create + self.start


def spread(values: Sequence[float], floor: Sequence[float] | None = None) -> str:
    """p50 and range in ms of ``values`` (seconds); with ``floor``, ms over the floor's p50."""
    ms = sorted(v * 1000 for v in values)
    text = f"p50 {statistics.median(ms):6.1f} ms ({ms[0]:.1f}-{ms[-1]:.1f})"
    if floor:
        text += f" {statistics.median(ms) - statistics.median(floor) * 1000:+6.1f}"
    return text


def phase_rows(size: int, floor_name: str, floor: Sequence[Creation], name: str,
               measured: Sequence[Creation]) -> list[str]:
    """One line per phase (:data:`PHASES`): the floor's figures, then ``name``'s with the p50
    difference (``name`` − floor, ms) and its 95% interval (:func:`difference_interval`);
    then the most shared containers either had on the new container's CPUs when its start
    returned. Raises ``ValueError`` when either has no sample."""
    if not floor or not measured:
        raise ValueError(f"no samples to compare ({floor_name}: {len(floor)}, "
                         f"{name}: {len(measured)})")
    width = max(len(floor_name), len(name))
    rows = []
    for phase in PHASES:
        base = [getattr(c, phase) for c in floor]
        mine = [getattr(c, phase) for c in measured]
        low, high = difference_interval(base, mine)
        rows.append(f"[{size:>4}] {phase:<6} {floor_name:<{width}} {spread(base):<34} | "
                    f"{name:<{width}} {spread(mine, base)}  (95% {low:+.1f} to {high:+.1f})")
    rows.append(f"[{size:>4}] shared containers on its CPUs when its start returned, max: "
                f"{floor_name} {max(c.sharing for c in floor)}, "
                f"{name} {max(c.sharing for c in measured)} (of {size})")
    return rows


def difference_interval(floor: Sequence[float], measured: Sequence[float]) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval, in ms, of ``measured``'s p50 minus ``floor``'s
    (seconds in): each side resampled with replacement :data:`RESAMPLES` times. How far the
    difference of two noisy medians can be trusted, e.g. whether "within 10 ms of the floor"
    is shown or only not ruled out."""
    draw = random.Random(0)
    differences = sorted(
        (statistics.median(draw.choices(measured, k=len(measured)))
         - statistics.median(draw.choices(floor, k=len(floor)))) * 1000
        for _ in range(RESAMPLES))
    return differences[int(0.025 * RESAMPLES)], differences[int(0.975 * RESAMPLES) - 1]


def interleaved(names: Sequence[str], samples: int) -> list[str]:
    """The order of ``samples`` samples of each of ``names``: one of each in turn, the turn's
    order reversed every other turn (a b b a a b ...). Machine noise falls on all alike, each
    is as often first and second after a switch, and a switch serves two samples."""
    return [name for turn in range(samples)
            for name in (names if turn % 2 == 0 else list(reversed(names)))]


def sample_line(size: int, number: int, name: str, creation: Creation) -> str:
    """One sample as it comes (a long run shows progress; an outlier shows where it fell);
    ``number`` 0: the warm-up after a switch, not counted."""
    tag = f"#{number:<2}" if number else "-- "
    note = "" if number else "  (warm-up after its start, not counted)"
    return (f"[{size:>4}] {tag} {name:<10} runp {creation.runp * 1000:6.1f}  create "
            f"{creation.create * 1000:6.1f}  start {creation.start * 1000:6.1f}  total "
            f"{creation.total * 1000:6.1f} ms  shared on its CPUs {creation.sharing}{note}")


def switch_line(size: int, seconds: Mapping[str, Sequence[float]]) -> str:
    """Each plugin's (re)starts: exec to synchronized, p50 and max, in seconds."""
    parts = [f"{name} {statistics.median(times):.2f} / {max(times):.2f} s (n={len(times)})"
             for name, times in seconds.items() if times]
    return f"[{size:>4}] plugin switches, exec to synchronized p50 / max: " + "; ".join(parts)


def hook_ms(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Each hook's time between two readings of its running sum (seconds), in ms; hooks that
    took no time left out."""
    return {hook: (total - before.get(hook, 0.0)) * 1000 for hook, total in after.items()
            if total > before.get(hook, 0.0)}


def hook_text(ms: Mapping[str, float]) -> str:
    """``CreateContainer 3.1, StopContainer 0.2 ms`` (``none`` when empty)."""
    if not ms:
        return "none"
    return ", ".join(f"{hook} {value:.1f}" for hook, value in sorted(ms.items())) + " ms"


def named_p50s(samples: Sequence[Mapping[str, float]]) -> str:
    """Each name's p50 and max over ``samples`` (hooks' or CPU times, ms; a sample without
    the name counts 0)."""
    hooks = sorted({hook for sample in samples for hook in sample})
    if not hooks:
        return "none"
    parts = []
    for hook in hooks:
        values = [sample.get(hook, 0.0) for sample in samples]
        parts.append(f"{hook} p50 {statistics.median(values):.1f} (max {max(values):.1f})")
    return ", ".join(parts) + " ms"
