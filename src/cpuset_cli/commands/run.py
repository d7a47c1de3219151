"""``nri-cpuset run``: the NRI plugin daemon, from its flags (see ``cpuset_cli.daemon.serve``)."""

from __future__ import annotations

import sys

import click

from cpuset_adapters import default_paths

_FLAG_KEYS = {"nri_socket": ("runtime", "nri_socket"), "cri_socket": ("runtime", "cri_socket"),
              "status_socket": ("runtime", "status_socket"),
              "log_level": ("observability", "log_level"),
              "listen": ("observability", "listen"),
              "log_format": ("observability", "log_format"),
              "allow_static_cpu_manager": ("runtime", "allow_static_cpu_manager"),
              "publish_topology": ("topology_publisher", "enabled"),
              "events": ("events", "enabled")}
"""Flags that set configuration keys: they win over the file, but only when given."""


def _explicit_flags(ctx: click.Context, values: dict[str, object]) -> dict[str, dict[str, object]]:
    overrides: dict[str, dict[str, object]] = {}
    for param, (section, key) in _FLAG_KEYS.items():
        if ctx.get_parameter_source(param) is click.core.ParameterSource.COMMANDLINE:
            overrides.setdefault(section, {})[key] = values[param]
    return overrides


@click.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="TOML configuration file (must exist); without it, "
                   "/etc/nri-cpuset/config.toml if it exists, else the built-in defaults.")
@click.option("--nri-socket", default=default_paths.NRI_SOCKET, show_default=True,
              help="The runtime's NRI socket (ignored when the runtime started the plugin). "
                   "Overrides runtime.nri_socket.")
@click.option("--plugin-name", default="nri-cpuset", show_default=True)
@click.option("--plugin-index", default="99", show_default=True,
              help="Two digits; plugins run in index order, so 99 sees other plugins' changes.")
@click.option("--sysfs-root", default="/sys", show_default=True,
              type=click.Path(exists=True, file_okay=False))
@click.option("--proc-root", default="/proc", show_default=True,
              type=click.Path(file_okay=False),
              help="Where the host's procfs is: quiet CPUs write interrupt affinities under "
                   "PROC_ROOT/irq (a container's own /proc/irq is read-only; the DaemonSet's "
                   "quiet-cpus component mounts the host's at /host/proc/irq).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="info", show_default=True, help="Overrides observability.log_level.")
@click.option("--cri-socket", default=default_paths.CRI_SOCKET, show_default=True,
              help="containerd's CRI socket: a pre-installed plugin on containerd 1.7 (which "
                   "never synchronizes it) reads the running containers there. Overrides "
                   "runtime.cri_socket.")
@click.option("--status-socket", default=default_paths.STATUS_SOCKET, show_default=True,
              help="Root-only unix socket serving the live state to `inspect` (\"\" disables). "
                   "Overrides runtime.status_socket.")
@click.option("--listen", default="127.0.0.1:9477", show_default=True, metavar="HOST:PORT",
              help="Serve /metrics, /healthz and /readyz here (\"\" disables). Overrides "
                   "observability.listen.")
@click.option("--log-format", type=click.Choice(["console", "json"]), default="json",
              show_default=True, help="console: one readable line per event; json: JSON lines. "
                                      "Overrides observability.log_format.")
@click.option("--allow-static-cpu-manager", is_flag=True,
              help="Start even though the kubelet's static CPU manager is active.")
@click.option("--publish-topology", is_flag=True,
              help="Publish this node's NodeResourceTopology for a topology-aware scheduler. "
                   "Overrides topology_publisher.enabled.")
@click.option("--events", is_flag=True,
              help="Write Kubernetes Events on pods and the node for what the plugin decides "
                   "(through the topology publisher's credentials). Overrides events.enabled.")
@click.option("--quiet-journal", default=default_paths.QUIET_JOURNAL, show_default=True,
              help="Where quiet CPUs' originals are kept before the plugin changes interrupts, "
                   "idle states or governors (\"\" turns quiet CPUs off: nothing is written).")
@click.option("--containerd-config", default=default_paths.CONTAINERD_CONFIG,
              show_default=True,
              help="Read (if readable) to tell why the NRI socket is missing.")
@click.pass_context
def run(ctx: click.Context, /, config_path: str | None, plugin_name: str, plugin_index: str,
        sysfs_root: str, proc_root: str, containerd_config: str, quiet_journal: str,
        **flags: object) -> None:
    """Run as an NRI plugin: pin every container the runtime creates.

    Connects to the runtime's NRI socket (reconnecting with backoff when it restarts), or, when
    containerd started it from its plugin directory, uses the socket it was given. Stops
    cleanly on SIGTERM or SIGINT; SIGHUP (or a change of the file) reloads the configuration;
    SIGUSR1 toggles debug logging. An invalid configuration, or the kubelet's static CPU
    manager, stops it with exit code 2.

    \b
    Example:
      nri-cpuset run --config /etc/nri-cpuset/config.toml --log-level debug
    """
    import os  # noqa: PLC0415

    load_daemon()
    from cpuset_cli.daemon import serve  # noqa: PLC0415 - loaded just above

    request = serve.RunRequest(config_path=config_path, overrides=_explicit_flags(ctx, flags),
                               plugin_name=plugin_name, plugin_index=plugin_index,
                               sysfs_root=sysfs_root, proc_root=proc_root,
                               containerd_config=containerd_config,
                               environ=os.environ, quiet_journal=quiet_journal or None)
    sys.exit(serve.run(request, lambda message: click.echo(message, err=True)))


def load_daemon() -> None:
    """Import the daemon's modules as the daemon holds them: here, so that the operator
    commands never pay for them, and after ``asyncio`` was loaded without ``ssl`` (decision
    52)."""
    from cpuset_adapters.ssl_deferred import import_without_ssl  # noqa: PLC0415

    import_without_ssl("asyncio")
    import cpuset_cli.daemon.serve  # noqa: PLC0415, F401
