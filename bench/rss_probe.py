"""The start of a fresh interpreter's RSS probe, shared by the benchmarks that cost a client.

A probe is ``DAEMON_IMPORTED`` followed by the lines that load and use what is measured; it
prints ``before`` (VmRSS in KiB with the daemon's modules imported) and ``rss()`` after.
"""

from __future__ import annotations

from typing import Final

DAEMON_IMPORTED: Final = """
import sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
import cpuset_cli.main, cpuset_cli.commands.run, cpuset_cli.daemon.serve
import cpuset_cli.daemon.plugin, cpuset_cli.daemon.inventory
import cpuset_adapters.observability.metrics
before = rss()
"""
