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
from cpuset_core.policy.numa import NumaUnresolvableError, memory_nodes_for
from cpuset_core.quiet_request import CRIO_KEYS, quiet_of
from cpuset_core.workload import (
    DEVICE_HINTS,
    ISOLATED,
    MIXED,
    QUIET_IDLE,
    QUIET_IRQS,
    RESERVED,
    SHARED,
    Toggle,
    toggle_of,
)

EXIT_INVALID: Final = 3


@click.command("check-annotation")
@click.argument("value")
@click.option("--key", default=DEFAULT_PIN_ANNOTATION, show_default=True,
              help="The annotation: the pin annotation, or one of this project's workload "
                   "annotations (FEATURE.nri-cpuset.io/pod or .../container.NAME, FEATURE one "
                   "of reserved-cpus, shared-cpus, mixed-cpus, isolated-cpus, device-hints, "
                   "quiet-irqs, quiet-idle), or one of CRI-O's the plugin reads "
                   "(irq-load-balancing.crio.io, cpu-c-states.crio.io, "
                   "cpu-freq-governor.crio.io).")
@topology_options
def check_annotation(value: str, key: str, sysfs_root: str | None,
                     topology_file: str | None) -> None:
    """Check a weka.io/cores-ids annotation VALUE against a topology, as the plugin would when
    a pod carrying it is created: the Linux CPU list syntax, then that every CPU is online.

    A valid value prints its canonical form, its CPUs and cores, and the NUMA nodes: the
    cpuset.mems every container of the annotated pod gets (a memoryless node is replaced by its
    nearest memory nodes). With --key naming a workload annotation, VALUE must be true or false,
    and what it does is printed. Exit code 0 when valid, 3 when not (the reason on stderr, with
    the position of a syntax error), 2 when the topology cannot be read.

    \b
    Example:
      nri-cpuset check-annotation 0-3,56-59
      nri-cpuset check-annotation '2,3,4,5' --topology epyc.json
      nri-cpuset check-annotation --key device-hints.nri-cpuset.io/pod false
      nri-cpuset check-annotation --key mixed-cpus.nri-cpuset.io/container.app true
    """
    toggle = toggle_of(key)
    if toggle is not None:
        _check_toggle(toggle, key, value)
        return
    if key in CRIO_KEYS:
        _check_crio(key, value)
        return
    if key != DEFAULT_PIN_ANNOTATION:
        _invalid(f"unknown annotation {key!r}: this checks {DEFAULT_PIN_ANNOTATION} and "
                 f"FEATURE.nri-cpuset.io/pod or FEATURE.nri-cpuset.io/container.NAME, FEATURE "
                 f"one of {', '.join(t.feature for t in _EFFECTS)}")
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


_EFFECTS: Final[dict[Toggle, tuple[str, str]]] = {
    RESERVED: ("will run on the reserved CPUs ([cpus] reserved), where its namespace may pin "
               "([pinning] namespaces)",
               "will be placed by its QoS, even in a namespace whose pods run on the reserved "
               "CPUs ([cpus] reserved_namespaces)"),
    SHARED: ("will run on the shared pool, not on exclusive CPUs, even as an integer container",
             "will be placed by its QoS (the default)"),
    MIXED: ("will get the whole CPUs of a fractional Guaranteed limit of one CPU or more as "
            "exclusive CPUs, and run on the shared pool as well",
            "will be placed by its QoS (the default)"),
    ISOLATED: ("will take its exclusive CPUs from the isolated ones (isolcpus), where its "
               "namespace may pin ([pinning] namespaces)",
               "will never get isolated CPUs, even where [cpus] exclusive_on_isolated allows "
               "them"),
    DEVICE_HINTS: ("will take the NUMA nodes of its devices when placed",
                   "will ignore the NUMA nodes of its devices when placed"),
    QUIET_IRQS: ("will have interrupts moved off its exclusive (or pinned) CPUs while it runs, "
                 "where its namespace may pin ([pinning] namespaces)",
                 "will leave interrupts where they are, even if the pod says "
                 "irq-load-balancing.crio.io: disable"),
    QUIET_IDLE: ("will have every idle state of its exclusive (or pinned) CPUs past polling "
                 "disabled while it runs, where its namespace may pin ([pinning] namespaces)",
                 "will leave idle states as they are, even if the pod says "
                 "cpu-c-states.crio.io"),
}
"""What each workload annotation does, when true and when false (docs/operations.md)."""


def _check_toggle(toggle: Toggle, key: str, value: str) -> None:
    """The plugin's check of a workload annotation, with its words, and what it does."""
    container = key.removeprefix(toggle.container_prefix) if key != toggle.pod_key else ""
    try:
        answer = toggle.resolve({key: value}, container, "")
    except AnnotationValueError as exc:
        _invalid(exc.detail)
    assert answer is not None  # its own key is set
    scope = ("every container of the pod" if key == toggle.pod_key
             else f"container {container!r}")
    click.echo(f"valid: {key}={value}")
    click.echo(f"  {scope} {_EFFECTS[toggle][0 if answer[0] else 1]}")


def _check_crio(key: str, value: str) -> None:
    """One of CRI-O's quiet-CPU annotations, as the plugin reads it (``quiet_request``)."""
    try:
        quiet = quiet_of({key: value}, "", "")
    except AnnotationValueError as exc:
        _invalid(exc.detail)
    click.echo(f"valid: {key}={value}")
    click.echo("  every container of the pod with exclusive (or pinned) CPUs " + (
        f"will have its CPUs quiet while it runs ({quiet.describe()}), where its namespace "
        f"may pin ([pinning] namespaces)" if quiet is not None else "asks nothing of them"))


def _invalid(message: str, *details: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    for line in details:
        click.echo(line, err=True)
    sys.exit(EXIT_INVALID)


def _plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
