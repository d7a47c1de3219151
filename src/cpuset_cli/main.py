"""The ``nri-cpuset`` command line: parses, calls the composition root, renders."""

from __future__ import annotations

import sys
from pathlib import Path

import click

import cpuset_core
from cpuset_adapters import default_paths
from cpuset_cli import bootstrap, launcher
from cpuset_cli.commands.bad_input import fail


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
# The plugin's version is the engine's: one definition, and the plugin pins that cpuset-core.
@click.version_option(cpuset_core.__version__, prog_name="nri-cpuset")
def cli() -> None:
    """Pin Kubernetes containers to CPUs and NUMA memory through containerd's NRI."""


_FLAG_KEYS = {"nri_socket": ("runtime", "nri_socket"), "cri_socket": ("runtime", "cri_socket"),
              "status_socket": ("runtime", "status_socket"),
              "log_level": ("observability", "log_level"),
              "listen": ("observability", "listen"),
              "log_format": ("observability", "log_format"),
              "allow_static_cpu_manager": ("runtime", "allow_static_cpu_manager")}
"""Flags that set configuration keys: they win over the file, but only when given."""


def _explicit_flags(ctx: click.Context, values: dict[str, object]) -> dict[str, dict[str, object]]:
    overrides: dict[str, dict[str, object]] = {}
    for param, (section, key) in _FLAG_KEYS.items():
        if ctx.get_parameter_source(param) is click.core.ParameterSource.COMMANDLINE:
            overrides.setdefault(section, {})[key] = values[param]
    return overrides


@cli.command()
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
@click.option("--containerd-config", default=default_paths.CONTAINERD_CONFIG,
              show_default=True,
              help="Read (if readable) to tell why the NRI socket is missing.")
@click.pass_context
def run(ctx: click.Context, /, config_path: str | None, plugin_name: str, plugin_index: str,
        sysfs_root: str, containerd_config: str, **flags: object) -> None:
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

    from cpuset_cli import serve  # noqa: PLC0415

    request = serve.RunRequest(config_path=config_path, overrides=_explicit_flags(ctx, flags),
                               plugin_name=plugin_name, plugin_index=plugin_index,
                               sysfs_root=sysfs_root, containerd_config=containerd_config,
                               environ=os.environ)
    sys.exit(serve.run(request, lambda message: click.echo(message, err=True)))


@cli.command("install-launcher")
@click.option("--plugin-dir", default="/opt/nri/plugins", show_default=True,
              type=click.Path(file_okay=False), help="containerd's NRI plugin_path.")
@click.option("--plugin-name", default="nri-cpuset", show_default=True)
@click.option("--plugin-index", default="99", show_default=True)
@click.option("--log-file", default="/var/log/nri-cpuset.log", show_default=True,
              help="Where the pre-installed plugin logs (the runtime discards its output).")
@click.option("--sysfs-root", default="/sys", show_default=True)
@click.option("--cri-socket", default=default_paths.CRI_SOCKET, show_default=True,
              help="containerd's CRI socket (read once at start on containerd 1.7); written "
                   "into the launcher when given, else runtime.cri_socket applies.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="The configuration file the plugin runs with (`run --config`); it must "
                   "exist whenever containerd starts the plugin.")
@click.pass_context
def install_launcher(ctx: click.Context, /, plugin_dir: str, plugin_name: str,
                     plugin_index: str, log_file: str, sysfs_root: str, cri_socket: str,
                     config_path: str | None) -> None:
    """Install the launcher containerd starts from its plugin directory (pre-installed mode).

    containerd starts it with only NRI_PLUGIN_NAME, NRI_PLUGIN_IDX and NRI_PLUGIN_SOCKET in the
    environment, so the launcher names this Python interpreter by absolute path.

    \b
    Example:
      nri-cpuset install-launcher --plugin-dir /opt/nri/plugins \\
          --config /etc/nri-cpuset/config.toml
    """
    from cpuset_adapters.nri.launch import validate_identity  # noqa: PLC0415

    try:
        validate_identity(plugin_name, plugin_index)
    except ValueError as exc:
        fail(str(exc))
    explicit = ctx.get_parameter_source("cri_socket") is click.core.ParameterSource.COMMANDLINE
    path = launcher.install(Path(plugin_dir), name=plugin_name, index=plugin_index,
                            python=sys.executable, log_file=log_file, sysfs_root=sysfs_root,
                            cri_socket=cri_socket if explicit else None,
                            config=str(Path(config_path).absolute()) if config_path else None)
    click.echo(f"installed {path}")


@cli.command("lab-demo")
def lab_demo_command() -> None:
    """Run the plugin for real on a private containerd with demonstration pods.

    Needs root and containerd 1.7 with NRI (``bash scripts/install-containerd``). Starts
    containerd in a temporary directory, runs ``nri-cpuset run`` against it, creates the same
    pods as ``plan --demo`` over CRI like a kubelet, and prints what the kernel enforces for each
    running container after every step, checked against the dry run. Exit code 1 if any
    placement differs from the dry run.

    \b
    Example:
      sudo nri-cpuset lab-demo
    """
    from cpuset_cli import lab_demo  # noqa: PLC0415 - pulls in grpc; only this command needs it

    topology = bootstrap.sysfs_topology().read_topology()
    mismatches = lab_demo.run(topology, click.echo)
    sys.exit(1 if mismatches else 0)


def _register_commands() -> None:
    # One module per operator command (cpuset_cli/commands/); registered here, in one place.
    from cpuset_cli.commands.check_annotation import check_annotation  # noqa: PLC0415
    from cpuset_cli.commands.check_config import check_config  # noqa: PLC0415
    from cpuset_cli.commands.explain import explain  # noqa: PLC0415
    from cpuset_cli.commands.inspect import inspect  # noqa: PLC0415
    from cpuset_cli.commands.plan import plan  # noqa: PLC0415
    from cpuset_cli.commands.simulate import simulate  # noqa: PLC0415
    from cpuset_cli.commands.topology import topology  # noqa: PLC0415

    cli.add_command(plan)
    cli.add_command(simulate)
    cli.add_command(topology)
    cli.add_command(check_annotation)
    cli.add_command(check_config)
    cli.add_command(inspect)
    cli.add_command(explain)


_register_commands()
