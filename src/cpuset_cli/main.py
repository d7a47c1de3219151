"""The ``nri-cpuset`` command line: parses, calls the composition root, renders."""

from __future__ import annotations

import importlib

import click

import cpuset_core

COMMANDS = {
    "run": "cpuset_cli.commands.run",
    "install-launcher": "cpuset_cli.commands.install_launcher",
    "plan": "cpuset_cli.commands.plan",
    "simulate": "cpuset_cli.commands.simulate",
    "topology": "cpuset_cli.commands.topology",
    "check-annotation": "cpuset_cli.commands.check_annotation",
    "check-config": "cpuset_cli.commands.check_config",
    "inspect": "cpuset_cli.commands.inspect",
    "explain": "cpuset_cli.commands.explain",
}
"""Every operator command (one module each in ``cpuset_cli/commands/``, defining a command of
the module's last name), registered here, in one place."""


class _Commands(click.Group):
    """Imports a command's module only when that command runs (or help lists it): the daemon
    never loads what only the operator commands need (less memory, faster start)."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context,  # noqa: ARG002
                    cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        command = getattr(importlib.import_module(module), module.rsplit(".", 1)[1])
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
# The plugin's version is the engine's: one definition, and the plugin pins that cpuset-core.
@click.version_option(cpuset_core.__version__, prog_name="nri-cpuset")
def cli() -> None:
    """Pin Kubernetes containers to CPUs and NUMA memory through containerd's NRI."""
