"""``nri-cpuset check-config``: what ``run`` would refuse to start with, without starting."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cpuset_adapters import default_paths
from cpuset_cli import bootstrap
from cpuset_cli.commands.bad_input import EXIT_BAD_INPUT, fail
from cpuset_core import TopologyError


@click.command("check-config")
@click.option("--config", "config_path", metavar="FILE", default=default_paths.CONFIG_FILE,
              show_default=True, type=click.Path(dir_okay=False),
              help="The configuration file to check (it must exist).")
@click.option("--sysfs-root", default="/sys", show_default=True,
              type=click.Path(file_okay=False), help="Check against this machine's topology.")
@click.option("--preinstalled", is_flag=True,
              help="Check as a pre-installed plugin: containerd hands it the NRI socket, so a "
                   "missing socket is not a problem.")
def check_config(config_path: str, sysfs_root: str, preinstalled: bool) -> None:
    """Check a configuration file the way `nri-cpuset run` does before it starts: every key
    and value, the values against this machine's topology, and the startup checks that refuse
    to start (the kubelet's static CPU manager; NRI disabled in containerd). Prints what it
    found; exit code 0 when `run` would start, 2 when it would refuse.

    Use it before installing a file for a pre-installed plugin: on containerd 1.7 a plugin
    that exits before registering keeps containerd from starting.

    \b
    Example:
      nri-cpuset check-config --config /etc/nri-cpuset/config.toml --preinstalled
    """
    # Imported here: only this command and `run` pay for the configuration stack.
    from cpuset_adapters.config import ConfigError, load_file  # noqa: PLC0415
    from cpuset_cli.daemon.startup_checks import run_checks  # noqa: PLC0415

    try:
        topology = bootstrap.sysfs_topology(sysfs_root).read_topology()
        config = load_file(config_path, topology)
    except (ConfigError, TopologyError) as exc:
        fail(str(exc))
    findings = run_checks(config, launched_by_runtime=preinstalled,
                          containerd_config=Path(default_paths.CONTAINERD_CONFIG))
    for finding in findings:
        click.echo(f"{'error' if finding.fatal else 'warning'}: {finding.message}", err=True)
    if any(f.fatal for f in findings):
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{config_path}: valid for this machine (online CPUs {topology.online})")
