"""The composition root: the only module that wires the core to concrete adapters.

The daemon, the CLI and the tests all build the application through these functions.
"""

from __future__ import annotations

from pathlib import Path

from cpuset_adapters.fake import FakeHost, FakeRuntime
from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_core import CpusetEngine, Settings, TopologySource

DryRun = FakeRuntime
"""An in-memory runtime around an engine: what dry runs admit pods into."""


def sysfs_topology(root: str | Path = "/sys") -> TopologySource:
    """Return the topology source for a sysfs tree (the real one by default)."""
    return SysfsTopologySource(root)


def build_engine(topology_source: TopologySource, settings: Settings | None = None) -> CpusetEngine:
    """Return an engine for the topology the source reads now."""
    return CpusetEngine(topology_source.read_topology(), settings)


def build_dry_run(topology_source: TopologySource,
                  settings: Settings | None = None) -> DryRun:
    """Return an in-memory runtime driving a fresh engine: what ``plan`` admits pods into."""
    engine = build_engine(topology_source, settings)
    return FakeRuntime(FakeHost(engine.topology), engine)
