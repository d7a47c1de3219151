"""Rendering results for people (rich tables) and for programs (JSON).

Tables are laid out by rich. On a terminal they fit its width (with colour); otherwise (a pipe,
a file, a test) they are never wrapped, so every row stays on one greppable line. rich is
imported only when something is rendered: every ``nri-cpuset`` start, the daemon's included,
imports this module.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a plan: what happened to one container."""

    step: int
    action: str
    container: str
    kind: str
    cpus: str
    mems: str
    result: str


_HEADERS = ("#", "action", "container", "kind", "cpus", "mems", "result")


def new_table(*headers: str, title: str | None = None) -> Table:
    """Return an empty borderless rich table with these column headers."""
    from rich.table import Table  # noqa: PLC0415

    return Table(*headers, title=title, title_justify="left", box=None, pad_edge=False,
                 header_style="bold")


def text(*renderables: RenderableType, terminal: bool | None = None) -> str:
    """Render ``renderables`` (tables, strings) one after the other and return the text.

    ``terminal`` (default: whether stdout is one) selects the terminal's width and colours;
    otherwise lines are never wrapped and carry no escape codes or trailing spaces.
    """
    from rich.console import Console  # noqa: PLC0415

    if terminal is None:
        terminal = sys.stdout.isatty()
    buffer = io.StringIO()
    console = Console(file=buffer, highlight=False, markup=False, emoji=False,
                      force_terminal=terminal, color_system="auto" if terminal else None,
                      width=shutil.get_terminal_size().columns if terminal else 100_000,
                      soft_wrap=not terminal)
    for renderable in renderables:
        console.print(renderable)
    out = buffer.getvalue()
    if not terminal:
        out = "\n".join(line.rstrip() for line in out.splitlines())
    return out.rstrip("\n")


def table(rows: Sequence[Row]) -> str:
    """Return the rows as a table."""
    grid = new_table(*_HEADERS)
    for r in rows:
        grid.add_row(str(r.step), r.action, r.container, r.kind, r.cpus, r.mems, r.result)
    return text(grid)


def as_json(rows: Sequence[Row]) -> str:
    return json.dumps([{"step": r.step, "action": r.action, "container": r.container,
                        "kind": r.kind, "cpus": r.cpus, "mems": r.mems, "result": r.result}
                       for r in rows], indent=2)
