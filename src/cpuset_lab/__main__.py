"""``python -m cpuset_lab demo``: the plugin for real on a private containerd, with demonstration
pods (what ``scripts/demo`` runs).

Needs root and containerd 1.7 with NRI (``bash scripts/install-containerd``). Exit code 1 if any
placement differs from the dry run, 2 for a usage error.
"""

from __future__ import annotations

import sys

from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_lab import demo


def main(argv: list[str]) -> int:
    if argv != ["demo"]:
        print("usage: python -m cpuset_lab demo", file=sys.stderr)
        return 2
    topology = SysfsTopologySource().read_topology()
    try:
        return 1 if demo.run(topology, print) else 0
    except demo.DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
