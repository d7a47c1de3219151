"""``nri-cpuset simulate``: replay an allocation trace and print the results and quality metrics."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import click

from cpuset_cli import bootstrap, render
from cpuset_cli.commands.bad_input import fail, read_input
from cpuset_cli.commands.config_input import config_option, read_settings
from cpuset_cli.placement_quality import Metrics, Ratio
from cpuset_cli.simulate import Placed, Rejected, Simulation, replay
from cpuset_cli.trace import AddEvent, Event, TraceError, read_trace
from cpuset_core import Settings, Topology, TopologyError, TopologySource

if TYPE_CHECKING:
    from rich.table import Table

SCHEMA_VERSION: Final = 1

TopologyFile = Callable[[str], TopologySource]
"""Turns the ``--topology FILE`` path into a topology source."""


def _file_source(path: str) -> TopologySource:
    return bootstrap.topology_source(None, path)


def make_simulate(topology_file: TopologyFile = _file_source) -> click.Command:
    """Return the ``simulate`` command reading ``--topology`` through ``topology_file``."""

    @click.command("simulate")
    @click.option("--topology", "topology_path", required=True, metavar="FILE",
                  type=click.Path(dir_okay=False),
                  help="The machine's topology file (format in docs/cli.md).")
    @click.option("--trace", "trace_path", required=True, metavar="FILE",
                  type=click.Path(dir_okay=False),
                  help='The trace: {"events": [{"op": "add", "id": 7, "request": 4}, ...]}.')
    @config_option
    @click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table",
                  show_default=True)
    def simulate(topology_path: str, trace_path: str, config_file: str | None,
                 output: str) -> None:
        """Replay an allocation trace through the engine the daemon uses, on a machine shape
        described by a topology file, and print one result per `add` event (the CPUs it got,
        or the typed reason it was rejected) and the allocation quality metrics: NUMA- and
        L3-confined %, whole-core %, split cores, admission failures with enough free CPUs,
        and p50/p99 decision time. Definitions and the JSON schema are in docs/cli.md.

        Trace events: {"op": "add", "id": N, "request": CPUS} (an integer container),
        {"op": "add", "id": N, "pinned": "0-1"} (an annotated pod pinned to those CPUs),
        {"op": "del", "id": N}. A malformed trace exits with code 2 naming the event.

        \b
        Example:
          nri-cpuset simulate --topology epyc.json --trace churn.json
          nri-cpuset simulate --topology epyc.json --trace churn.json -o json \\
            | jq .metrics.numa_confined
          nri-cpuset simulate --topology epyc.json --trace churn.json --config spread.toml
        """
        topology = _read_topology(topology_file, topology_path)
        settings = read_settings(config_file, topology)
        events = _read_events(trace_path)
        if output == "table" and sys.stdout.isatty():
            simulation = _replay_with_progress(topology, events, settings)
        else:
            simulation = replay(topology, events, settings=settings)
        if output == "json":
            click.echo(as_json(simulation))
        else:
            click.echo(as_table(events, simulation))

    return simulate


simulate = make_simulate()


def _read_topology(topology_file: TopologyFile, path: str) -> Topology:
    try:
        return topology_file(path).read_topology()
    except TopologyError as exc:
        fail(str(exc))


def _read_events(path: str) -> tuple[Event, ...]:
    return read_input(path, read_trace, (TraceError,))


def _replay_with_progress(topology: Topology, events: Sequence[Event],
                          settings: Settings) -> Simulation:
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import Progress  # noqa: PLC0415

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("replaying", total=len(events))
        return replay(topology, events, settings=settings,
                      on_event=lambda done: progress.update(task, completed=done))


# -- output ------------------------------------------------------------------------------------


def document(simulation: Simulation) -> dict[str, Any]:
    """Return the JSON document (schema in docs/cli.md), built with cattrs."""
    import cattrs  # noqa: PLC0415
    from cattrs.gen import make_dict_unstructure_fn, override  # noqa: PLC0415

    converter = cattrs.Converter()
    converter.register_unstructure_hook(
        Rejected, make_dict_unstructure_fn(Rejected, converter, detail=override(omit=True)))
    return {"schema": SCHEMA_VERSION,
            "results": [converter.unstructure(r) for r in simulation.results],
            "metrics": converter.unstructure(simulation.metrics)}


def as_json(simulation: Simulation) -> str:
    return json.dumps(document(simulation), indent=2)


def as_table(events: Sequence[Event], simulation: Simulation) -> str:
    """Return the results (one row per ``add``) and the metrics as tables."""
    results = render.new_table("event", "id", "asks", "cpus / result")
    adds = [e for e in events if isinstance(e, AddEvent)]
    for event, result in zip(adds, simulation.results, strict=True):
        asks = f"pinned {event.pinned}" if event.pinned is not None else f"{event.request} CPUs"
        outcome = (result.cpus if isinstance(result, Placed)
                   else f"REJECTED {result.error}: {result.detail}")
        results.add_row(str(event.index), str(event.id), asks, outcome)
    return render.text(results, "", metrics_table(simulation.metrics))


def metrics_table(metrics: Metrics) -> Table:
    """Return the metrics as a table for people (the benchmark prints the same)."""
    table = render.new_table("metric", "value", "detail")
    table.add_row("events", str(metrics.events),
                  f"{metrics.requests} integer requests: {metrics.admitted} admitted, "
                  f"{metrics.rejected} rejected")
    for name, value, what in (
            ("NUMA-confined", metrics.numa_confined, "requests that fit one NUMA node"),
            ("L3-confined", metrics.l3_confined, "requests that fit one L3 group"),
            ("whole-core", metrics.whole_core,
             f"requests that are a multiple of {metrics.threads_per_core} thread(s) per "
             f"core with enough whole free cores")):
        table.add_row(name, _percent(value), f"{value.met} of {value.eligible} {what}")
    split = metrics.split_cores
    table.add_row("split cores", f"{split.time_average:g} avg", f"max {split.max}")
    table.add_row("failures with free CPUs", str(metrics.failures_with_free_cpus),
                  "rejected although enough CPUs were free")
    times = metrics.decision_ms
    if times.count:
        table.add_row("decision time", f"p50 {times.p50:.3f} ms",
                      f"p99 {times.p99:.3f} ms, max {times.max:.3f} ms over {times.count}")
    else:
        table.add_row("decision time", "-", "no decision")
    return table


def _percent(value: Ratio) -> str:
    return "-" if value.percent is None else f"{value.percent:g} %"
