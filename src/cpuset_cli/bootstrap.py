"""The composition root: the only module that wires the core to concrete adapters.

The daemon, the CLI and the tests all build the application through these functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from cpuset_adapters.fake import FakeHost, FakeRuntime
from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_core import CpusetEngine, Settings, TopologySource

if TYPE_CHECKING:
    from cpuset_cli.daemon import Daemon

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


def build_daemon(topology_source: TopologySource, *, environ: Mapping[str, str], name: str,
                 index: str, socket_path: str, cri_socket: str | None = None,
                 status_socket: str | None = None, settings: Settings | None = None,
                 hotplug_interval: float = 2.0) -> Daemon:
    """Return the NRI plugin daemon: engine + NRI handler + session + update task.

    A pre-installed plugin (``NRI_PLUGIN_SOCKET`` in ``environ``) takes its name, index and
    socket from the runtime. Raises ``ValueError`` for a bad name or index and
    ``TopologyError`` when the topology cannot be read. ``cri_socket`` is where a
    pre-installed plugin reads running containers when the runtime does not synchronize it.
    A sysfs topology source is watched for CPUs going on- or offline every
    ``hotplug_interval`` seconds (0 disables it); any other source is fixed.
    """
    # Imported here: the dry-run commands never pay for protobuf and the NRI stack.
    from cpuset_adapters.hotplug import OnlineCpuWatcher  # noqa: PLC0415
    from cpuset_adapters.nri.handler import CpusetNriHandler  # noqa: PLC0415
    from cpuset_adapters.nri.launch import launch_from_environ  # noqa: PLC0415
    from cpuset_adapters.nri.pusher import UpdatePusher  # noqa: PLC0415
    from cpuset_adapters.nri.session import NriSession  # noqa: PLC0415
    from cpuset_cli.daemon import DEFAULT_CRI_SOCKET, Daemon  # noqa: PLC0415

    launch = launch_from_environ(environ, name=name, index=index, socket_path=socket_path)
    engine = build_engine(topology_source, settings)
    pusher = UpdatePusher(engine)
    handler = CpusetNriHandler(engine, pusher)
    session = NriSession(handler, name=launch.name, index=launch.index)
    watcher = None
    if isinstance(topology_source, SysfsTopologySource) and hotplug_interval > 0:
        watcher = OnlineCpuWatcher(
            topology_source.root / "devices" / "system" / "cpu" / "online", topology_source,
            interval=hotplug_interval)
    return Daemon(session=session, handler=handler, pusher=pusher, endpoint=launch.endpoint,
                  cri_socket=cri_socket or DEFAULT_CRI_SOCKET, status_socket=status_socket,
                  watcher=watcher)


def topology_source(sysfs_root: str | None, topology_file: str | None) -> TopologySource:
    """Return the source the operator commands' ``--sysfs-root DIR | --topology FILE`` name: the
    topology file when given, else the sysfs tree (``/sys`` when neither is given).

    Raises ``ValueError`` when both are given: they are mutually exclusive.
    """
    if sysfs_root is not None and topology_file is not None:
        raise ValueError("--sysfs-root and --topology are mutually exclusive")
    if topology_file is not None:
        # Imported here: the daemon reads sysfs and never pays for cattrs.
        from cpuset_adapters.topology_file import TopologyFileSource  # noqa: PLC0415

        return TopologyFileSource(topology_file)
    return sysfs_topology(sysfs_root if sysfs_root is not None else "/sys")
