"""``python -m cpuset_lab demo``: the plugin for real on a private containerd, with demonstration
pods (what ``scripts/demo`` runs).

Needs root and the lab's containerd with NRI (``bash scripts/install-containerd``): ``--runtime
1.7`` or ``2.x``, by default ``$NRI_CPUSET_RUNTIME`` or 1.7. Exit code 1 if any placement
differs from the dry run or the runtime is not installed, 2 for a usage error.
"""

from __future__ import annotations

import sys

from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_lab import demo
from cpuset_lab.containerd_install import LabError, UnknownRuntime, find_installation

USAGE = "usage: python -m cpuset_lab demo [--runtime NAME]"


def main(argv: list[str]) -> int:
    match argv:
        case ["demo"]:
            runtime = None
        case ["demo", "--runtime", name]:
            runtime = name
        case _:
            print(USAGE, file=sys.stderr)
            return 2
    try:
        installation = find_installation(runtime=runtime)
    except UnknownRuntime as exc:
        print(f"{USAGE}\nerror: {exc}", file=sys.stderr)
        return 2
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    topology = SysfsTopologySource().read_topology()
    try:
        return 1 if demo.run(topology, installation, print) else 0
    except demo.DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
