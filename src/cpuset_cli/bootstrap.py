"""The composition root: the only module that wires the core to concrete adapters.

The daemon, the CLI and the tests all build the application through these functions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from cpuset_adapters import default_paths
from cpuset_adapters.dry_run import DryRunHost, DryRunRuntime
from cpuset_adapters.sysfs import SysfsTopologySource
from cpuset_core import CpusetEngine, Settings, TopologySource

if TYPE_CHECKING:
    import os

    from cpuset_adapters.cgroup_writer import KernelCpusetWriter
    from cpuset_adapters.device_locality import LocateDevices
    from cpuset_adapters.observability.metrics import PluginMetrics
    from cpuset_adapters.systemd.scope_writer import SystemdScopeWriter
    from cpuset_cli.daemon.events import EventReporting
    from cpuset_cli.daemon.live_config import LiveConfig
    from cpuset_cli.daemon.plugin import Daemon
    from cpuset_cli.daemon.quiet_loop import QuietLoop
    from cpuset_cli.daemon.topology_publisher import TopologyPublisher
    from cpuset_service.placement import PlacementService

DryRun = DryRunRuntime
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
    return DryRunRuntime(DryRunHost(engine.topology), engine)


def build_daemon(topology_source: TopologySource, *, environ: Mapping[str, str], name: str,
                 index: str, socket_path: str = default_paths.NRI_SOCKET,
                 cri_socket: str | None = None, status_socket: str | None = None,
                 settings: Settings | None = None, listen: str | None = None,
                 request_timeout: float = 2.0, config: LiveConfig | None = None,
                 hotplug_interval: float = 2.0, cgroup_root: str = default_paths.CGROUP_ROOT,
                 verify_period: float = 5.0, kernel_updates: bool = True,
                 start_grace: float = 120.0, systemd_units: bool = True,
                 quiet_journal: str | None = default_paths.QUIET_JOURNAL,
                 proc_root: str = "/proc") -> Daemon:
    """Return the NRI plugin daemon: engine + NRI handler + session + update task, all
    reporting to one set of metrics.

    A pre-installed plugin (``NRI_PLUGIN_SOCKET`` in ``environ``) takes its name, index and
    socket from the runtime. Raises ``ValueError`` for a bad name or index and
    ``TopologyError`` when the topology cannot be read. ``cri_socket`` is where a
    pre-installed plugin reads running containers when the runtime does not synchronize it.
    ``listen`` (``host:port``; ``None`` or ``""``: off) serves /metrics, /healthz and /readyz;
    ``request_timeout`` (seconds, the runtime's ``plugin_request_timeout``) sizes the hook
    duration buckets.
    With ``config`` (``nri-cpuset run``), the sockets and settings come from
    ``config.current`` instead of the keyword arguments, and the daemon reloads it.
    A sysfs topology source is watched for CPUs going on- or offline every
    ``hotplug_interval`` seconds (0 disables it); any other source is fixed. The verifier reads
    containers' cgroups under ``cgroup_root`` every ``verify_period`` seconds and after each
    burst (0 disables it). ``kernel_updates``: other containers' cpusets are written into
    their cgroups under ``cgroup_root`` before the runtime is answered (when that tree is
    writable), the runtime's record following later (decision 51); ``systemd_units``: for
    containers that are systemd scopes, their units' properties too, over D-Bus. Containers
    not seen to
    start are asked about over CRI at ``cri_socket`` and give their CPUs back when they will
    not run (created ``start_grace`` seconds ago and not started, or their start failed).
    Quiet CPUs (issue 43) are written under ``proc_root`` and the topology's sysfs, their originals
    journaled in ``quiet_journal`` (``None``: requests are kept, nothing is written).
    """
    # Imported here: the dry-run commands never pay for protobuf and the NRI stack.
    from cpuset_adapters.cgroup_writer import (  # noqa: PLC0415
        CgroupQuotaWriter,
        KernelCpusetWriter,
    )
    from cpuset_adapters.cgroupfs import CgroupReader  # noqa: PLC0415
    from cpuset_adapters.cri.start_probe import CriStartProbe  # noqa: PLC0415
    from cpuset_adapters.hotplug import OnlineCpuWatcher  # noqa: PLC0415
    from cpuset_adapters.nri.launch import launch_from_environ  # noqa: PLC0415
    from cpuset_adapters.observability.metrics import PluginMetrics  # noqa: PLC0415
    from cpuset_adapters.systemd.bus import SystemdBus  # noqa: PLC0415
    from cpuset_adapters.systemd.scope_writer import SystemdScopeWriter  # noqa: PLC0415
    from cpuset_cli.daemon.plugin import DEFAULT_CRI_SOCKET, Daemon  # noqa: PLC0415
    from cpuset_cli.daemon.verify_loop import VerifierLoop  # noqa: PLC0415
    from cpuset_service.placement import PlacementService  # noqa: PLC0415
    from cpuset_service.verifier import Verifier  # noqa: PLC0415

    if config is not None:
        from cpuset_adapters.config import to_settings  # noqa: PLC0415

        runtime = config.current.runtime
        socket_path, cri_socket = runtime.nri_socket, runtime.cri_socket
        status_socket, settings = runtime.status_socket or None, to_settings(config.current)
        listen = config.current.observability.listen
        cgroup_root, verify_period = runtime.cgroup_root, runtime.verify_period
        kernel_updates, start_grace = runtime.kernel_updates, runtime.start_grace
        systemd_units = runtime.systemd_units
    launch = launch_from_environ(environ, name=name, index=index, socket_path=socket_path)
    # With a configuration, the engine runs on the topology it was checked against (read
    # once at start); the source is still what the hotplug watcher re-reads.
    # Released CPUs wait for the verifier's confirmation before another exclusive owner gets
    # them (a dropped update would otherwise leave two): only when there is a verifier.
    engine = CpusetEngine(config.topology if config is not None
                          else topology_source.read_topology(), settings,
                          confirm_releases=verify_period > 0)
    metrics = PluginMetrics(request_timeout)
    service = PlacementService(engine, observer=metrics)
    if config is not None:
        config.attach(service)
    writer = KernelCpusetWriter(cgroup_root, service.cgroup_path)
    # Exclusive containers' CFS quota is lifted in their cgroups (the record keeps the
    # kubelet's: decision 54), whatever the kernel fast path does with cpusets.
    unusable, service.quota.writer = writer.unusable(), CgroupQuotaWriter(cgroup_root)
    # Scopes' units too: the bus is connected (and jeepney imported) at the first scope.
    scopes = SystemdScopeWriter(writer, service.cgroup_path, SystemdBus(),
                                count=metrics.systemd_units)
    scopes.enabled = systemd_units
    kernel_path = _kernel_path(scopes, unusable, kernel_updates)
    if not unusable:
        _attach_kernel(service, scopes, writer)
        service.pusher.kernel.enabled = kernel_updates
        if config is not None:
            config.kernel_updates = _switch(writer, service.pusher.kernel.switch)
            config.systemd_units = scopes.switch
    watcher = None
    if isinstance(topology_source, SysfsTopologySource) and hotplug_interval > 0:
        watcher = OnlineCpuWatcher(
            topology_source.root / "devices" / "system" / "cpu" / "online", topology_source,
            interval=hotplug_interval)
    probe = CriStartProbe(cri_socket or DEFAULT_CRI_SOCKET, CgroupReader(cgroup_root))
    service.starts.probe, service.starts.grace = probe, start_grace
    if config is not None:
        config.start_grace = _set_grace(service)
    verifier = None
    if verify_period > 0:
        verifier = VerifierLoop(service, Verifier(service), CgroupReader(cgroup_root).observe_all,
                                period=verify_period)
    publisher, events = (None, None) if config is None else (
        _publisher(config, service, metrics, environ, _sysfs_root(topology_source)),
        _events(config, service, metrics, environ))
    return Daemon(service=service, launch=launch, cri_socket=cri_socket or DEFAULT_CRI_SOCKET,
                  status_socket=status_socket, metrics=metrics, listen=listen or None,
                  config=config, watcher=watcher, verifier=verifier, kernel_path=kernel_path,
                  kernel_view=None if unusable else CgroupReader(cgroup_root).observe_all,
                  start_probe=probe, publisher=publisher, events=events,
                  locate_devices=_device_locator(_sysfs_root(topology_source)),
                  request_budget=scopes.budget,
                  quiet=_quiet(service, Path(proc_root), _sysfs_root(topology_source),
                               quiet_journal, metrics))


def _quiet(service: PlacementService, proc_root: Path, sysfs_root: Path, journal: str | None,
           metrics: PluginMetrics) -> QuietLoop | None:
    """The node's quiet CPUs behind the service's port, and the loop that reconciles them."""
    from cpuset_adapters.quiet.applier import QuietApplier  # noqa: PLC0415
    from cpuset_adapters.quiet.host import QuietHost  # noqa: PLC0415
    from cpuset_adapters.quiet.irqbalance import Irqbalances, IrqbalanceTeller  # noqa: PLC0415
    from cpuset_adapters.quiet.journal import JournalError, QuietJournal  # noqa: PLC0415
    from cpuset_cli.daemon.quiet_loop import QuietLoop  # noqa: PLC0415

    if journal is None:
        return None
    try:
        originals = QuietJournal(journal)
    except JournalError as exc:  # not guessed at: the operator puts back what it lists
        logging.getLogger("nri_cpuset.quiet").error("quiet CPUs off: %s", exc)
        return None
    # irqbalance is found among this process's own /proc (the host's with hostPID), while
    # the interrupts are written where --proc-root says (a pod gets the host's /proc/irq).
    daemons = IrqbalanceTeller(Irqbalances("/proc", sysfs_root, "/run"), originals)
    service.quiet.node = QuietApplier(QuietHost(proc_root, sysfs_root), originals, daemons)
    return QuietLoop(service, metrics.quiet_files, metrics.quiet_repairs)


def _sysfs_root(topology_source: TopologySource) -> Path:
    """The sysfs tree the topology comes from (``/sys`` for a source that names none): the
    memory of NUMA nodes and the locality of devices are read there too."""
    return Path(getattr(topology_source, "root", "/sys"))


def _device_locator(sysfs_root: Path) -> LocateDevices:
    from cpuset_adapters.device_locality import SysfsDeviceLocator  # noqa: PLC0415

    return SysfsDeviceLocator(sysfs_root).locate


def _publisher(config: LiveConfig, service: PlacementService, metrics: PluginMetrics,
               environ: Mapping[str, str],
               sysfs_root: str | os.PathLike[str]) -> TopologyPublisher | None:
    """The NodeResourceTopology publisher ``[topology_publisher]`` asks for, if any."""
    if not config.current.topology_publisher.enabled:
        return None  # nor its modules (decision 56)
    from cpuset_cli.daemon.topology_publisher import publisher_for  # noqa: PLC0415

    # The publisher reads the declared policy of every reload.
    return publisher_for(config.current.topology_publisher, service, metrics, environ=environ,
                         sysfs_root=sysfs_root,
                         policy=lambda: config.current.topology_publisher.policy)


def _events(config: LiveConfig, service: PlacementService, metrics: PluginMetrics,
            environ: Mapping[str, str]) -> EventReporting | None:
    """The Kubernetes Events ``[events]`` asks for, if any: told by the service, counted in
    the metrics."""
    if not config.current.events.enabled:
        return None
    from cpuset_adapters.observability import event_metrics  # noqa: PLC0415
    from cpuset_cli.daemon.events import events_for  # noqa: PLC0415

    events = events_for(lambda: config.current, service, environ=environ)
    if events is not None:
        service.notices = events.notices
        event_metrics.register(metrics.registry, events.totals)
    return events


def _set_grace(service: PlacementService) -> Callable[[float], None]:
    """``runtime.start_grace`` reloaded: the next judgements use it."""
    def reloaded(grace: float) -> None:
        service.starts.grace = grace
    return reloaded


def _attach_kernel(service: PlacementService, scopes: SystemdScopeWriter,
                   writer: KernelCpusetWriter) -> None:
    """The kernel fast path writes through ``scopes``; the files ``writer`` keeps open are
    closed when their container goes, or at a resync, and running containers are readied for
    their first write off the hooks' path."""
    from cpuset_adapters.kernel_readying import KernelReadying  # noqa: PLC0415

    readying = KernelReadying(writer.ready)

    def forgotten(container_id: str) -> None:
        readying.drop(container_id)
        writer.forget(container_id)

    def resynced() -> None:
        readying.clear()
        writer.close_files()

    service.pusher.kernel.attach(scopes, forgotten=forgotten, resynced=resynced,
                                 readied=readying.queue)


def _kernel_path(scopes: SystemdScopeWriter, unusable: str, enabled: bool) -> str:
    """Which path other containers' cpuset updates take, and why (logged at start)."""
    if unusable:
        return f"through the runtime only: {unusable}"
    if not enabled:
        return "through the runtime only: runtime.kernel_updates = false"
    writer = scopes.files
    return (f"kernel first (cgroup v{writer.version} under {writer.root}), the runtime's "
            f"record following later; {writer.balance_note}; "
            f"{_scopes_note(scopes)}")


def _scopes_note(scopes: SystemdScopeWriter) -> str:
    """What happens to systemd scopes' units (the systemd cgroup driver), and why."""
    if scopes.files.version != 2:
        return "systemd scopes: files only (systemd sets no cpuset on cgroup v1)"
    if not scopes.enabled:
        return "systemd scopes: files only (runtime.systemd_units = false)"
    return "systemd scopes: AllowedCPUs/AllowedMemoryNodes set over D-Bus before their files"


def _switch(writer: KernelCpusetWriter, switch: Callable[[bool], None],
            ) -> Callable[[bool], None]:
    """``runtime.kernel_updates`` reloaded: the root's balance flag is read again when the
    fast path comes on (an operator may have partitioned the root meanwhile)."""
    def reloaded(enabled: bool) -> None:
        if enabled:
            writer.read_root_balance()
        switch(enabled)
    return reloaded


def topology_source(sysfs_root: str | None, topology_file: str | None) -> TopologySource:
    """Return the source the operator commands' ``--sysfs-root DIR | --topology FILE`` name: the
    topology file when given, else the sysfs tree (``/sys`` when neither is given).

    Raises ``ValueError`` when both are given: they are mutually exclusive.
    """
    if sysfs_root is not None and topology_file is not None:
        raise ValueError("--sysfs-root and --topology are mutually exclusive")
    if topology_file is not None:
        # Imported here: only --topology needs the file format (the daemon reads sysfs).
        from cpuset_adapters.topology_file import TopologyFileSource  # noqa: PLC0415

        return TopologyFileSource(topology_file)
    return sysfs_topology(sysfs_root if sysfs_root is not None else "/sys")
