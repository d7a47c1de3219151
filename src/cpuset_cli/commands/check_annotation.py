"""``nri-cpuset check-annotation``: would the plugin accept this pin annotation here?"""

from __future__ import annotations

import sys
from typing import Final, NoReturn

import click

from cpuset_cli.commands.topology_input import read_topology, topology_options
from cpuset_core import (
    DEFAULT_PIN_ANNOTATION,
    AnnotationValueError,
    CpuListSyntaxError,
    CPUSet,
    Topology,
)
from cpuset_core.devices import HINTS_CONTAINER_PREFIX, HINTS_POD, hints_wanted
from cpuset_core.policy.numa import NumaUnresolvableError, memory_nodes_for

EXIT_INVALID: Final = 3


@click.command("check-annotation")
@click.argument("value")
@click.option("--key", default=DEFAULT_PIN_ANNOTATION, show_default=True,
              help="The annotation: the pin annotation, or one of the device-hints ones "
                   f"({HINTS_POD}, {HINTS_CONTAINER_PREFIX}NAME).")
@topology_options
def check_annotation(value: str, key: str, sysfs_root: str | None,
                     topology_file: str | None) -> None:
    """Check a weka.io/cores-ids annotation VALUE against a topology, as the plugin would when
    a pod carrying it is created: the Linux CPU list syntax, then that every CPU is online.

    A valid value prints its canonical form, its CPUs and cores, and the NUMA nodes: the
    cpuset.mems every container of the annotated pod gets (a memoryless node is replaced by its
    nearest memory nodes). With --key naming a device-hints annotation, VALUE must be true or
    false. Exit code 0 when valid, 3 when not (the reason on stderr, with the position of a
    syntax error), 2 when the topology cannot be read.

    \b
    Example:
      nri-cpuset check-annotation 0-3,56-59
      nri-cpuset check-annotation '2,3,4,5' --topology epyc.json
      nri-cpuset check-annotation --key device-hints.nri-cpuset.io/pod false
    """
    if key == HINTS_POD or key.startswith(HINTS_CONTAINER_PREFIX):
        _check_device_hints(key, value)
        return
    if key != DEFAULT_PIN_ANNOTATION:
        _invalid(f"unknown annotation {key!r}: this checks {DEFAULT_PIN_ANNOTATION}, "
                 f"{HINTS_POD} and {HINTS_CONTAINER_PREFIX}NAME")
    topology = read_topology(sysfs_root, topology_file)
    try:
        pins = CPUSet.parse(value)
    except CpuListSyntaxError as exc:
        _invalid(f"{key}={value!r} is invalid: {exc.problem} at position {exc.position}",
                 "  " + value, "  " + " " * exc.position + "^")
    _check_available(key, value, pins, topology)
    try:
        mems = memory_nodes_for(topology, pins)
    except NumaUnresolvableError as exc:
        _invalid(f"{key}={value!r}: cannot determine NUMA memory nodes for CPUs {pins}: {exc}")

    cores = topology.cores_within(pins)
    unnamed = CPUSet.union_of(cores) - pins
    listed = ": " + " ".join("/".join(map(str, core)) for core in cores) if len(cores) <= 16 else ""
    rows = [
        ("canonical", pins.format()),
        ("cpus", f"{_plural(len(pins), 'CPU')} on {_plural(len(cores), 'core')}{listed}"),
        ("NUMA nodes", topology.numa_nodes_of(pins).format()),
        ("mems", f"{mems} (cpuset.mems of every container of the pod)"),
    ]
    if unnamed:
        rows.append(("note", f"CPU(s) {unnamed} share a core with the named CPUs but are not "
                             f"named"))
    isolated = pins & topology.isolated
    if isolated:
        rows.append(("note", f"CPU(s) {isolated} are isolated (isolcpus): the scheduler does "
                             f"not balance a pod's threads across them"))
    click.echo(f"valid: {key}={value}")
    width = max(len(name) for name, _ in rows)
    for name, text in rows:
        click.echo(f"  {name.ljust(width)}  {text}")


def _check_available(key: str, value: str, pins: CPUSet, topology: Topology) -> None:
    """The engine's rule: every pinned CPU is online. Says which are unknown and which offline."""
    unavailable = pins - topology.online
    if not unavailable:
        return
    unknown = unavailable - topology.known
    offline = unavailable & topology.known
    why = ", ".join(part for part in (f"{unknown} (not in the topology)" if unknown else "",
                                      f"{offline} (offline)" if offline else "") if part)
    _invalid(f"{key}={value!r} names CPU(s) that are not online: {why}; "
             f"online: {topology.online}")


def _check_device_hints(key: str, value: str) -> None:
    """The plugin's check of a device-hints annotation, with its words."""
    container = key.removeprefix(HINTS_CONTAINER_PREFIX) if key != HINTS_POD else ""
    try:
        wanted = hints_wanted({key: value}, container, "")
    except AnnotationValueError as exc:
        _invalid(exc.detail)
    scope = "every container of the pod" if key == HINTS_POD else f"container {container!r}"
    effect = "take" if wanted else "ignore"
    click.echo(f"valid: {key}={value}")
    click.echo(f"  {scope} will {effect} the NUMA nodes of its devices when placed")


def _invalid(message: str, *details: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    for line in details:
        click.echo(line, err=True)
    sys.exit(EXIT_INVALID)


def _plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
