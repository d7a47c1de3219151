"""The ``--config FILE`` option of the dry-run commands: the daemon's own configuration file,
so that a dry run decides with the settings the node runs with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from cpuset_cli.commands.bad_input import fail
from cpuset_core import Settings, Topology

F = TypeVar("F", bound=Callable[..., Any])


def config_option(command: F) -> F:
    """Add ``--config FILE`` to ``command``."""
    return click.option(
        "--config", "config_file", metavar="FILE", type=click.Path(dir_okay=False),
        help="Decide with the settings of this configuration file (the daemon's TOML: "
             "reserved CPUs, who may pin, allocation options). [default: built-in defaults]",
    )(command)


def read_settings(config_file: str | None, topology: Topology) -> Settings:
    """The core settings ``config_file`` names, checked against ``topology``; the defaults
    without a file. An invalid or missing file: every problem on stderr, exit code 2."""
    if config_file is None:
        return Settings()
    # Imported here: only a dry run with a file needs the configuration package.
    from cpuset_adapters.config import ConfigError, load_file, to_settings  # noqa: PLC0415

    try:
        return to_settings(load_file(config_file, topology))
    except ConfigError as exc:
        fail(str(exc))
