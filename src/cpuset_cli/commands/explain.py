"""``nri-cpuset explain``: why a container has the CPUs it has."""

from __future__ import annotations

import click

from cpuset_adapters.status_socket import DEFAULT_STATUS_SOCKET, read_status
from cpuset_cli import quiet_view, state_view
from cpuset_cli.commands.bad_input import fail


@click.command()
@click.argument("container")
@click.option("--status-socket", default=DEFAULT_STATUS_SOCKET, show_default=True,
              help="The daemon's status socket (`run --status-socket`).")
def explain(container: str, status_socket: str) -> None:
    """Explain why CONTAINER (an id, a unique id prefix, or namespace/pod/container) has its
    CPUs: its classification with the facts that decided it, the allocation step, its quiet-CPU
    request and what became of it, and every move it went through.

    \b
    Example:
      sudo nri-cpuset explain shop/db/postgres
      sudo nri-cpuset explain 3f2a1c9e
    """
    try:
        view = state_view.decode(read_status(status_socket))
    except (OSError, ValueError) as exc:
        fail(f"cannot read the daemon's state from {status_socket}: {exc}")
    matches = [c for c in view.containers
               if container in (c.id, c.subject) or c.subject.endswith(f"/{container}")
               or (len(container) >= 4 and c.id.startswith(container))]
    if len(matches) != 1:
        names = ", ".join(f"{c.subject} ({c.id[:12]})" for c in matches)
        problem = f"matches {len(matches)} containers: {names}" if matches else "matches nothing"
        fail(f"{container!r} {problem}")
    (found,) = matches
    click.echo(f"{found.subject} ({found.id})")
    click.echo(f"  kind:  {found.kind}")
    click.echo(f"  cpus:  {found.cpus}")
    click.echo(f"  mems:  {found.mems if found.mems is not None else 'default (not pinned)'}")
    click.echo(f"  why:   {found.reason}")
    if found.devices:
        click.echo(f"  devices: on NUMA node {found.devices} (its exclusive CPUs are taken "
                   f"there when they fit; a pin keeps what it asked)")
    if found.quiet is not None:
        for line in quiet_view.text_lines(found.quiet):
            click.echo(line)
        for note in view.quiet.problems:  # what the node's last pass could not do
            click.echo(f"         the node's last pass: {note}")
    if found.kind in ("shared", "mixed"):
        click.echo(f"         the shared pool is online ({view.online}) minus pinned and "
                   f"exclusive CPUs (and isolated ones): {view.shared_pool}")
    if found.kind == "reserved":
        click.echo(f"         the reserved CPUs ([cpus] reserved, online, not isolated): "
                   f"{view.reserved_pool or 'none online: it runs on the shared pool'}")
    if found.id in view.drift:
        click.echo("  drift: the cpuset last set for it differs from this; a live update is due")
    click.echo("  history:")
    for event in found.history or ["(nothing recorded since the plugin started)"]:
        click.echo(f"    - {event}")
