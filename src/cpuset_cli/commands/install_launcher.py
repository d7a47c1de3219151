"""``nri-cpuset install-launcher``: the launcher containerd starts from its plugin directory."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cpuset_adapters import default_paths
from cpuset_cli.commands.bad_input import fail
from cpuset_cli.daemon import launcher


@click.command("install-launcher")
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
