"""What the daemon's imports cost in resident memory, part by part (issue 45, decision 56).

Each figure is read in a fresh interpreter (VmRSS, KiB, from ``/proc/self/status``):

- ``bare``: the interpreter alone; ``daemon``: after the modules ``nri-cpuset run`` imports
  (``load_daemon`` when the tree has it, else the daemon's modules imported directly, as
  before decision 56), the composition root and the daemon;
- each part the daemon still holds: imported first, into a bare interpreter (so it counts
  what it shares with the rest: an upper bound of what leaving it out would save);
- each part the daemon no longer holds at rest: imported after the daemon's modules (what
  importing it would add now).

Run from the repository root of any tree: ``python bench/daemon_memory.py``. Prints figures
only; nothing is asserted. Needs no root, no containerd.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path.cwd() / "src"

DAEMON = """
import cpuset_cli.main, cpuset_cli.commands.run as run
if hasattr(run, "load_daemon"):
    run.load_daemon()
import cpuset_cli.daemon.serve, cpuset_cli.bootstrap, cpuset_cli.daemon.plugin
import cpuset_cli.daemon.inventory
"""

HELD = {
    "asyncio (without ssl where the tree keeps it out)":
        "import sys; sys.modules['ssl'] = None; import asyncio",
    "click": "import click",
    "protobuf and the NRI messages": "import cpuset_adapters.nri.proto.nri_pb2",
    "configuration (attrs, cattrs, tomllib)": "import cpuset_adapters.config",
    "cpuset_core (dataclasses, inspect)": "import cpuset_core",
}

NO_SSL = "import sys; sys.modules['ssl'] = None; "

KEPT_OUT = {
    "ssl": "import ssl",
    "prometheus_client (ssl included: it imports it)": "import prometheus_client",
    "http.server with http.client, email (no ssl)": NO_SSL + "import http.server",
    "http.client with email (no ssl; not used: http11)":
        NO_SSL + "import http.client",
    "the API client's modules (publisher or events on)":
        NO_SSL + "import cpuset_adapters.kubernetes.api_client",
    "protobuf's pure-Python messages (deferred on upb)":
        "from cpuset_adapters.protobuf_deferred import load, PURE_PYTHON_MESSAGES as M\n"
        "load(M)",
    "difflib": "import difflib",
}

RSS = """
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
"""


def measure(before: str, part: str) -> tuple[int, int]:
    """VmRSS (KiB) after ``before`` and then after ``part``, in a fresh interpreter."""
    code = f"{RSS}\n{before}\na = rss()\n{part}\nprint(a, rss())"
    out = subprocess.run(  # noqa: S603 - our interpreter, our code
        [sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)}, capture_output=True,
        text=True, check=True)
    first, second = out.stdout.split()
    return int(first), int(second)


def main() -> int:
    bare, daemon = measure("", DAEMON)
    print(f"bare interpreter            {bare / 1024:6.1f} MiB")
    print(f"after the daemon's imports  {daemon / 1024:6.1f} MiB  "
          f"(+{(daemon - bare) / 1024:.1f})")
    print("\nparts the daemon holds (imported first, into a bare interpreter):")
    for name, code in HELD.items():
        before, after = measure("", code)
        print(f"  {name:<52} {(after - before) / 1024:5.1f} MiB")
    print("\nparts imported after the daemon's modules (what each adds to them):")
    for name, code in KEPT_OUT.items():
        try:
            before, after = measure(DAEMON, code)
        except subprocess.CalledProcessError:
            print(f"  {name:<52}     - (not in this tree)")
            continue
        print(f"  {name:<52} {(after - before) / 1024:5.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
