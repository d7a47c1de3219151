"""The ``nri-cpuset`` command line: parses, calls the composition root, renders."""

from __future__ import annotations

import click

import cpuset_core


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
# The plugin's version is the engine's: one definition, and the plugin pins that cpuset-core.
@click.version_option(cpuset_core.__version__, prog_name="nri-cpuset")
def cli() -> None:
    """Pin Kubernetes containers to CPUs and NUMA memory through containerd's NRI."""


def _register_commands() -> None:
    # One module per operator command (cpuset_cli/commands/); registered here, in one place.
    from cpuset_cli.commands.check_annotation import check_annotation  # noqa: PLC0415
    from cpuset_cli.commands.check_config import check_config  # noqa: PLC0415
    from cpuset_cli.commands.explain import explain  # noqa: PLC0415
    from cpuset_cli.commands.inspect import inspect  # noqa: PLC0415
    from cpuset_cli.commands.install_launcher import install_launcher  # noqa: PLC0415
    from cpuset_cli.commands.plan import plan  # noqa: PLC0415
    from cpuset_cli.commands.run import run  # noqa: PLC0415
    from cpuset_cli.commands.simulate import simulate  # noqa: PLC0415
    from cpuset_cli.commands.topology import topology  # noqa: PLC0415

    cli.add_command(run)
    cli.add_command(install_launcher)
    cli.add_command(plan)
    cli.add_command(simulate)
    cli.add_command(topology)
    cli.add_command(check_annotation)
    cli.add_command(check_config)
    cli.add_command(inspect)
    cli.add_command(explain)


_register_commands()
