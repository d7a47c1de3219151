"""``nri-cpuset run`` from flags to a running daemon: the configuration (file, then explicit
flags), the startup checks, logging, and the daemon. Nothing starts unless all of it is valid.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from cpuset_adapters import default_paths
from cpuset_adapters.config import DEFAULT_PATH, ConfigError, Document, Observability
from cpuset_cli import bootstrap
from cpuset_cli.commands.bad_input import EXIT_BAD_INPUT
from cpuset_cli.daemon.live_config import LiveConfig
from cpuset_cli.daemon.startup_checks import run_checks
from cpuset_core import TopologyError

_log = logging.getLogger("nri_cpuset.daemon")


@attrs.frozen(kw_only=True)
class RunRequest:
    """What the command line asked for."""

    config_path: str | None
    """``--config``: must exist when given; else the default path, if it exists."""
    overrides: Document
    """The flags given explicitly, as configuration keys (they win over the file)."""
    plugin_name: str
    plugin_index: str
    sysfs_root: str
    containerd_config: str
    environ: Mapping[str, str]
    quiet_journal: str | None = default_paths.QUIET_JOURNAL
    """``--quiet-journal``: quiet CPUs' originals (``None``: quiet CPUs off)."""
    proc_root: str = "/proc"
    """``--proc-root``: the procfs whose ``irq/`` quiet CPUs write (the host's, mounted)."""


def configure_logging(observability: Observability) -> Callable[[str], None]:
    """Log to stderr (a pre-installed plugin's launcher sends it to a file) at
    ``log_level`` in ``log_format``; SIGUSR1 toggles debug logging. Returns how a reload sets
    the level (it is also the level the toggle returns to)."""
    from cpuset_adapters.observability.logging import configure_logging as configure  # noqa: PLC0415

    logs = configure(observability.log_level,
                     "json" if observability.log_format == "json" else "console")
    # A plain signal handler, not the event loop's: it works even when the loop is stuck,
    # which is when debug logs are wanted most (logging's locks are reentrant).
    signal.signal(signal.SIGUSR1, logs.toggle_debug)
    return logs.set_level


def load(request: RunRequest) -> LiveConfig:
    """Return the startup configuration; raise ``ConfigError`` or ``TopologyError``."""
    topology = bootstrap.sysfs_topology(request.sysfs_root).read_topology()
    return LiveConfig.load(request.config_path or DEFAULT_PATH,
                           required=request.config_path is not None, topology=topology,
                           overrides=request.overrides)


def run(request: RunRequest, fail: Callable[[str], None]) -> int:
    """Start the daemon and serve until a signal stops it; return the exit code. Every reason
    not to start goes to ``fail`` (stderr) and returns ``EXIT_BAD_INPUT``."""
    try:
        live = load(request)
    except (ConfigError, TopologyError) as exc:
        fail(f"error: {exc}")
        return EXIT_BAD_INPUT
    live.set_log_level = configure_logging(live.current.observability)
    _log.info("%s", live.describe_source())
    findings = run_checks(live.current,
                          launched_by_runtime="NRI_PLUGIN_SOCKET" in request.environ,
                          containerd_config=Path(request.containerd_config))
    fatal = [f.message for f in findings if f.fatal]
    for finding in findings:
        if not finding.fatal:
            _log.warning("%s", finding.message)
    if fatal:
        for message in fatal:
            fail(f"error: {message}")
        return EXIT_BAD_INPUT
    try:
        # The sysfs source (the engine takes the topology `live` was checked against): the
        # daemon watches it for CPUs going on- or offline.
        daemon = bootstrap.build_daemon(bootstrap.sysfs_topology(request.sysfs_root),
                                        environ=request.environ, name=request.plugin_name,
                                        index=request.plugin_index, config=live,
                                        quiet_journal=request.quiet_journal,
                                        proc_root=request.proc_root)
    except (ValueError, TopologyError) as exc:
        fail(f"error: {exc}")
        return EXIT_BAD_INPUT
    asyncio.run(daemon.run_until_signalled())
    return 0
