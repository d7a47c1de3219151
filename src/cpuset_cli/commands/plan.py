"""``nri-cpuset plan``: admit pods in order into a dry run of the engine and show what happens."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

import click

from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap, demo, plan_view, render, state_view
from cpuset_cli.commands.bad_input import fail, read_input
from cpuset_cli.commands.config_input import config_option, read_settings
from cpuset_cli.commands.topology_input import read_topology, source_name, topology_options
from cpuset_cli.pod_fields import PodsInputError
from cpuset_cli.pod_specs import ContainerSpec, PodSpec
from cpuset_cli.pods import load_pods
from cpuset_core import AdmissionError, CpuListSyntaxError, CPUSet, CpusetError, Plan, Topology

EXIT_OK: Final = 0
EXIT_REJECTED: Final = 3

_MAX_POOL_NAMES: Final = 3


@click.command("plan")
@click.option("--pods", "pods_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Pods to admit, in order: what `kubectl get pods -o json` (or -o yaml) "
                   "prints, a List or a single Pod.")
@click.option("--demo", "run_demo", is_flag=True,
              help="Admit the built-in demonstration pods (shared, integer, pinned, bad input).")
@topology_options
@config_option
@click.option("--state", "state_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Start from a saved live state (`nri-cpuset inspect -o json > FILE`).")
@click.option("--device", "devices", metavar="NS/POD/CONTAINER=NODES", multiple=True,
              help="Give a container of --pods devices on these NUMA nodes (a list, e.g. 1 or "
                   "0-1), as the plugin reads them from sysfs on a node. Repeatable.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def plan(
        pods_file: str | None, run_demo: bool, sysfs_root: str | None,
        topology_file: str | None, config_file: str | None, state_file: str | None,
        devices: tuple[str, ...], output: str) -> None:
    """Dry-run the allocator: admit pods in order through the same engine the daemon uses and
    show, per container, its kind (annotated / integer / shared), CPUs and memory nodes, the
    live moves and shared-pool changes each admission causes, and rejected containers with
    their typed reason. Init containers run (and, unless they are sidecars, exit) before the
    app containers, as the kubelet runs them.

    Exit codes: 0 every container admitted, 3 some rejected, 2 bad input (the message names
    the file, the pod and the field). JSON schema in docs/cli.md.

    \b
    Example:
      kubectl get pods -A -o json > pods.json
      nri-cpuset plan --pods pods.json
      nri-cpuset plan --pods pods.yaml --topology epyc.json -o json | jq '.steps[] | .cpus'
      sudo nri-cpuset inspect -o json > live.json
      nri-cpuset plan --pods new.yaml --state live.json
      nri-cpuset plan --demo --sysfs-root tests/fixtures/sysfs/dual-socket
      nri-cpuset plan --pods pods.json --config /etc/nri-cpuset/config.toml
      nri-cpuset plan --pods pods.json --device shop/db/postgres=1
    """
    if run_demo == (pods_file is not None):
        raise click.UsageError("pass --pods FILE (pods to admit) or --demo (the built-in "
                               "scenario)" if not run_demo else
                               "--demo and --pods are mutually exclusive")
    if run_demo and state_file is not None:
        raise click.UsageError("--state applies to --pods, not to --demo")
    # Bad input is reported before anything else is printed.
    pods = _read_pods(pods_file) if pods_file is not None else ()
    if devices:
        if run_demo:
            raise click.UsageError("--device applies to --pods, not to --demo")
        pods = with_devices(pods, devices)
    state = _read_state(state_file) if state_file is not None else None
    where = source_name(sysfs_root, topology_file)
    topology = read_topology(sysfs_root, topology_file)
    settings = read_settings(config_file, topology)
    runtime = bootstrap.build_dry_run(StaticTopologySource(topology), settings)
    click.echo(f"topology from {where}: online {topology.online}, {len(topology.cores)} cores, "
               f"NUMA nodes {list(topology.numa_nodes)}", err=True)
    if run_demo:
        _demo(runtime, topology, output)
        return
    problems = plan_view.seed(runtime, state, settings) if state is not None else []
    for problem in problems:
        click.echo(f"warning: {state_file}: {problem}", err=True)
    view = plan_view.admit_all(runtime, pods, topology=where, state_problems=problems)
    click.echo(plan_view.as_json(view) if output == "json" else _table(view))
    click.echo(f"{view.admitted} container(s) admitted, {view.rejected} rejected", err=True)
    sys.exit(EXIT_REJECTED if view.rejected else EXIT_OK)


def with_devices(pods: Sequence[PodSpec], given: Sequence[str]) -> tuple[PodSpec, ...]:
    """``pods`` with the devices of ``--device`` options given to the containers they name;
    a usage error for an option that names no container or no valid list of nodes."""
    wanted: dict[str, CPUSet] = {}
    for option in given:
        subject, _, nodes = option.partition("=")
        try:
            wanted[subject] = CPUSet.parse(nodes)
        except CpuListSyntaxError as exc:
            raise click.UsageError(f"--device {option}: NODES must be a list like 1 or 0-1 "
                                   f"({exc.problem} at position {exc.position})") from exc
    changed = []
    for pod in pods:
        def given_to(spec: ContainerSpec, pod: PodSpec = pod) -> ContainerSpec:
            nodes = wanted.pop(f"{pod.facts.namespace}/{pod.facts.name}/{spec.name}", None)
            if nodes is None:
                return spec
            located = plan_view.devices_on(nodes.format(), "--device")
            return replace(spec, facts=replace(spec.facts, devices=located))
        changed.append(replace(pod, init_containers=tuple(map(given_to, pod.init_containers)),
                               containers=tuple(map(given_to, pod.containers))))
    if wanted:
        raise click.UsageError(f"--device names no container of --pods: {', '.join(wanted)}")
    return tuple(changed)


def _read_pods(pods_file: str) -> tuple[PodSpec, ...]:
    return read_input(pods_file, load_pods, (PodsInputError,))


def _read_state(state_file: str) -> state_view.StateView:
    try:
        with open(state_file, "rb") as f:
            return state_view.decode(f.read())
    except OSError as exc:
        fail(f"{state_file}: cannot be read: {exc.strerror or exc}")
    except ValueError as exc:  # JSON, schema and shape errors (cattrs' included)
        fail(f"{state_file}: {str(exc).splitlines()[0]}")


def _table(view: plan_view.PlanView) -> str:
    rows: list[render.Row] = []
    for step in view.steps:
        subject = f"{step.pod}/{step.container}"
        action = step.action + (" init" if step.init else "")
        if step.rejected is not None:
            rows.append(render.Row(step.step, action, subject, "-", "-", "-",
                                   f"REJECTED {step.rejected.reason}: {step.reason}"))
            continue
        mems = "-" if step.action == plan_view.EXIT else step.mems or "(default)"
        rows.append(render.Row(step.step, action, subject, step.kind or "-", step.cpus or "-",
                               mems, step.reason))
        rows.extend(render.Row(step.step, "  live move", m.container, m.kind,
                               f"{m.previous_cpus} -> {m.cpus}", "", m.reason)
                    for m in step.moves)
        if step.shared_pool is not None:
            pool = step.shared_pool
            rows.append(render.Row(step.step, "  shared pool", _names(pool.containers), "shared",
                                   f"{pool.before or '(empty)'} -> {pool.after or '(empty)'}",
                                   "", "shared pool changed"))
    return render.table(rows)


def _names(containers: Sequence[str]) -> str:
    shown = ", ".join(containers[:_MAX_POOL_NAMES])
    more = len(containers) - _MAX_POOL_NAMES
    return f"{shown} and {more} more" if more > 0 else shown


# -- the built-in demonstration ----------------------------------------------------------------


def _demo(runtime: bootstrap.DryRun, topology: Topology, output: str) -> None:
    rows: list[render.Row] = []
    for number, make_step in enumerate(demo.steps(topology, runtime), start=1):
        rows.extend(_run_step(runtime, number, make_step()))
    click.echo(render.table(rows) if output == "table" else render.as_json(rows))


def _run_step(runtime: bootstrap.DryRun, number: int, step: demo.DemoStep) -> list[render.Row]:
    if step.action == "remove":
        result = runtime.remove_container(step.remove_id)
        return [render.Row(number, "remove", step.remove_id, "-", "-", "-", "released"),
                *_update_rows(number, result)]
    assert step.pod is not None
    assert step.container is not None
    name = f"{step.pod.namespace}/{step.pod.name}/{step.container.name}"
    try:
        result = runtime.create_container(step.pod, step.container)
    except (AdmissionError, CpusetError) as exc:
        return [render.Row(number, "create", name, "-", "-", "-", f"REJECTED {exc.reason}: "
                           f"{getattr(exc, 'detail', exc)}")]
    placement = result.placement
    assert placement is not None
    row = render.Row(number, "create", name, _label(result), placement.cpus.format(),
                     placement.mems.format() if placement.mems is not None else "(default)",
                     result.reason)
    return [row, *_update_rows(number, result)]


def _label(plan: Plan) -> str:
    """The created container's kind as operators say it (``reserved``, ``mixed``, ...)."""
    assert plan.container_id is not None
    return plan.result.entries[plan.container_id].label


def _update_rows(number: int, result: Plan) -> list[render.Row]:
    return [render.Row(number, "  live update", u.subject, u.kind.value,
                       f"{u.previous_cpus} -> {u.cpus}", "", u.reason) for u in result.updates]
