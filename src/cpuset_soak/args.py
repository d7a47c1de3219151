"""The soak's command line (``python -m cpuset_soak --help``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from cpuset_core.cpuset import CPUSet

from .walk import WEIGHTS

RUNTIMES: Final = {"1.7": "1.7.", "2.x": "2."}
"""``--runtime`` → the version prefix its installation must report."""
GROUPS: Final = {"quiet": frozenset({"create-quiet-request"})}
"""Names ``--without`` takes for several kinds (``quiet``: every quiet-CPU request, so the
walk never changes the host's interrupts or idle states, nor takes its lock)."""


def parse_args(argv: list[str] | None, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cpuset_soak", description=description)
    parser.add_argument("--minutes", type=float, default=3.0, help="walk this long (default 3)")
    parser.add_argument("--seed", type=int, default=None, help="default: from the clock")
    parser.add_argument("--runtime", choices=sorted(RUNTIMES), default=None,
                        help="containerd to run (default 1.7, or the replayed history's)")
    parser.add_argument("--replay", type=Path, default=None, metavar="FILE",
                        help="run the operations of a history.jsonl instead of a walk")
    parser.add_argument("--verify-period", type=int, default=2,
                        help="the plugin's runtime.verify_period (s); settling waits on it")
    parser.add_argument("--reserved", type=CPUSet.parse, default=CPUSet(),
                        help="the plugin's cpus.reserved (default: its default, none)")
    parser.add_argument("--if-available", action="store_true",
                        help="exit 0, saying so, when the runtime is not installed")
    parser.add_argument("--hotplug", action="store_true",
                        help="take CPUs offline and back (root, cgroup v2; never CPU 0)")
    parser.add_argument("--time-scale", type=_scale, default=1.0, metavar="F",
                        help="every wait F times longer (an emulated VM lab guest: 8)")
    parser.add_argument("--without", type=_kinds, default=frozenset(), metavar="KIND,...",
                        help="operations and faults the walk never draws "
                        f"({', '.join([*GROUPS, *WEIGHTS])})")
    parser.add_argument("--keep", action="store_true", help="keep the run's directory")
    return parser.parse_args(argv)


def _kinds(text: str) -> frozenset[str]:
    named = frozenset(k.strip() for k in text.split(",") if k.strip())
    if unknown := sorted(named - set(WEIGHTS) - set(GROUPS)):
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(unknown)} (known: "
                                         f"{', '.join([*GROUPS, *WEIGHTS])})")
    return frozenset().union(*(GROUPS.get(k, {k}) for k in named))


def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be from 1 to 100, got {text}")
    return value
