"""``nri-cpuset inspect``: the running daemon's live state."""

from __future__ import annotations

import json

import click

from cpuset_adapters.status_socket import DEFAULT_STATUS_SOCKET, read_status
from cpuset_cli import quiet_view, render, state_view
from cpuset_cli.commands.bad_input import fail


@click.command()
@click.option("--status-socket", default=DEFAULT_STATUS_SOCKET, show_default=True,
              help="The daemon's status socket (`run --status-socket`).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def inspect(status_socket: str, output: str) -> None:
    """Show the running daemon's live state: every container with its kind, cpus and mems; the
    pinned CPUs with their reference counts and the exclusive CPUs with their owners; the shared
    pool; drift (containers whose last known cpuset differs from the ledger); and the
    containers the verifier found off their placement in the kernel's cgroup files; each quiet-CPU
    request (given, not given and why, or pending) and what the node's last pass made quiet.

    \b
    Example:
      sudo nri-cpuset inspect
      sudo nri-cpuset inspect -o json | jq '.containers[] | select(.kind == "integer")'
    """
    try:
        data = read_status(status_socket)
        view = state_view.decode(data)
    except OSError as exc:
        fail(f"cannot read the daemon's state from {status_socket}: {exc}"
             " (is `nri-cpuset run` running, and are you root?)")
    except ValueError as exc:
        fail(f"{status_socket}: {exc}")
    if output == "json":
        # The daemon serves compact JSON (cheaper to make on its event loop); people read this.
        click.echo(json.dumps(json.loads(data), indent=2))
        return
    _render(view)


def _render(view: state_view.StateView) -> None:
    table = render.new_table("container", "id", "kind", "cpus", "mems", "reason")
    for c in view.containers:
        table.add_row(c.subject, c.id[:12], c.kind, c.cpus or "-",
                      c.mems if c.mems is not None else "default", c.reason)
    lines: list[str] = [f"runtime: {view.runtime or 'not configured'}; synchronized: "
                        f"{'yes' if view.synchronized else 'no'}; online {view.online}; "
                        f"shared pool {view.shared_pool or '(empty)'}"]
    trailer: list[str] = []
    if view.pinned:
        trailer.append("pinned (refcount): " + ", ".join(f"{cpu}×{n}"
                                                         for cpu, n in view.pinned.items()))
    if view.exclusive:
        owners = {c.id: c.subject for c in view.containers}
        trailer.append("exclusive: " + ", ".join(f"{cpu}={owners.get(o, o[:12])}"
                                                 for cpu, o in view.exclusive.items()))
    trailer.append(f"drift: {', '.join(view.drift) if view.drift else 'none'}; pending live "
                   f"updates: {len(view.pending_updates)}; runtime records lagging: "
                   f"{len(view.records_lagging)}")
    if view.draining:
        trailer.append(f"draining: {view.draining} (given up, not yet seen left in the kernel: "
                       f"kept from exclusive use)")
    subjects = {c.id: c.subject for c in view.containers}
    trailer.extend(f"off its placement in the kernel: {subjects.get(cid, cid[:12])}: {what}"
                   for cid, what in view.kernel_drift.items())
    trailer.extend(f"quiet: {c.subject}: {c.quiet.asks} ({', '.join(c.quiet.keys)}): "
                   f"{quiet_view.summary(c.quiet)}" for c in view.containers if c.quiet)
    trailer.extend(quiet_view.node_lines(view.quiet))
    click.echo(render.text(*lines, table, *trailer))
