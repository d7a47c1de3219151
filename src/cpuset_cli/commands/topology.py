"""``nri-cpuset topology``: the machine's CPU topology as the plugin sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from cpuset_cli import topology_view
from cpuset_cli.commands.topology_input import read_topology, source_name, topology_options
from cpuset_core import CPUSet

if TYPE_CHECKING:
    from rich.text import Text

ISOLATED_MARK = "*"
OFFLINE_MARK = "~"


@click.command()
@topology_options
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def topology(sysfs_root: str | None, topology_file: str | None, output: str) -> None:
    """Show the CPU topology: sockets, dies, NUMA nodes (with memory or not, distances), L3
    groups, cores with their sibling threads, and online, offline and isolated CPUs.

    The table has one line per core group (cores sharing a socket, die, NUMA node and L3
    group), each core written as its threads (0/56 = CPUs 0 and 56). The JSON schema is in
    docs/cli.md.

    \b
    Example:
      nri-cpuset topology
      nri-cpuset topology --topology epyc.json -o json | jq '.numa_nodes[].cpus'
    """
    topo = read_topology(sysfs_root, topology_file)
    view = topology_view.build(topo, source=source_name(sysfs_root, topology_file))
    if output == "json":
        click.echo(topology_view.as_json(view))
        return
    _render(view)


def _render(view: topology_view.TopologyView) -> None:
    # Imported here: every `nri-cpuset` start (the daemon's included) registers this command.
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    console = Console(highlight=False)
    if not console.is_terminal:
        # Piped or captured: one line per core group whatever its length, for grep and diff.
        console.width = 100_000
    cpus = view.cpus
    online = CPUSet.parse(cpus.online)
    isolated = CPUSet.parse(cpus.isolated, allow_empty=True)
    offline = CPUSet.parse(cpus.offline, allow_empty=True)
    dies = sum(len(s.dies) for s in view.sockets)
    with_memory = CPUSet(n.id for n in view.numa_nodes if n.has_memory)

    groups = Table("socket", "die", "NUMA", "L3", "CPUs", "cores (threads)", box=None,
                   pad_edge=False)
    for g in view.core_groups:
        groups.add_row(str(g.socket), str(g.die), str(g.numa), str(g.l3), g.cpus,
                       _cores_text(g.cores, online, isolated))

    nodes = Table("NUMA", "CPUs", "memory", "pinned mems", box=None, pad_edge=False)
    has_distances = any(n.distances for n in view.numa_nodes)
    distance_columns = [n.id for n in view.numa_nodes] if has_distances else []
    for node in distance_columns:
        nodes.add_column(f"→{node}", justify="right")
    for n in view.numa_nodes:
        nodes.add_row(str(n.id), n.cpus or "(none)", "yes" if n.has_memory else "no",
                      n.pinned_mems if n.pinned_mems is not None else "-",
                      *(str(n.distances.get(str(other), "?")) for other in distance_columns))

    marks = [f"{mark} {what}" for mark, what, cpus_marked in
             ((ISOLATED_MARK, "isolated", isolated), (OFFLINE_MARK, "offline", offline))
             if cpus_marked]
    with console.capture() as captured:
        console.print(f"{view.source}: {_plural(len(CPUSet.parse(cpus.described)), 'CPU')}; "
                      f"online {cpus.online}; offline {cpus.offline or 'none'}; "
                      f"isolated {cpus.isolated or 'none'}", soft_wrap=True)
        console.print(f"{_plural(len(view.sockets), 'socket')}, {_plural(dies, 'die')}, "
                      f"{_plural(len(view.numa_nodes), 'NUMA node')} (memory on "
                      f"{with_memory.format() or 'none'}), "
                      f"{_plural(len(view.l3_groups), 'L3 group')}, "
                      f"{_threads(len(view.cores), view.threads_per_core)}", soft_wrap=True)
        console.print()
        console.print(groups)
        if marks:
            console.print(f"({', '.join(marks)})", soft_wrap=True)
        console.print()
        console.print(nodes)
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


def _threads(cores: int, threads_per_core: dict[str, int]) -> str:
    """``"8 cores × 2 threads"``, or ``"4 cores: 3 × 2 threads, 1 × 1 thread"`` when mixed."""
    counts = [f"{count} × {_plural(int(n), 'thread')}" for n, count in threads_per_core.items()]
    if len(counts) == 1:
        return f"{_plural(cores, 'core')} × {_plural(int(next(iter(threads_per_core))), 'thread')}"
    return f"{_plural(cores, 'core')}: {', '.join(counts)}"


def _cores_text(cores: list[list[int]], online: CPUSet, isolated: CPUSet) -> Text:
    from rich.text import Text  # noqa: PLC0415

    text = Text()
    for n, threads in enumerate(cores):
        if n:
            text.append(" ")
        for t, cpu in enumerate(threads):
            if t:
                text.append("/")
            if cpu not in online:
                text.append(f"{cpu}{OFFLINE_MARK}", style="dim")
            elif cpu in isolated:
                text.append(f"{cpu}{ISOLATED_MARK}", style="yellow")
            else:
                text.append(str(cpu))
    return text


def _plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
