"""The ``--sysfs-root DIR | --topology FILE`` options of the commands that read a topology."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from cpuset_cli import bootstrap
from cpuset_cli.commands.bad_input import fail
from cpuset_core import Topology, TopologyError

F = TypeVar("F", bound=Callable[..., Any])


def topology_options(command: F) -> F:
    """Add ``--sysfs-root DIR`` and ``--topology FILE`` (mutually exclusive) to ``command``."""
    command = click.option(
        "--topology", "topology_file", metavar="FILE", type=click.Path(dir_okay=False),
        help="Read the topology from this JSON file (format in docs/cli.md) instead of sysfs.",
    )(command)
    return click.option(
        "--sysfs-root", metavar="DIR", type=click.Path(file_okay=False),
        help="Read the topology from this sysfs tree.  [default: /sys]",
    )(command)


def source_name(sysfs_root: str | None, topology_file: str | None) -> str:
    """Where the topology comes from, for people."""
    if topology_file is not None:
        return topology_file
    return sysfs_root if sysfs_root is not None else "/sys"


def read_topology(sysfs_root: str | None, topology_file: str | None) -> Topology:
    """Read the topology the options name, through the composition root.

    Both options → a usage error (exit 2); an unreadable or inconsistent source → one line on
    stderr and exit 2.
    """
    try:
        source = bootstrap.topology_source(sysfs_root, topology_file)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        return source.read_topology()
    except TopologyError as exc:
        fail(str(exc))
