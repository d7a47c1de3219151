"""Rendering results for people (aligned text) and for programs (JSON)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass


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


def table(rows: Sequence[Row]) -> str:
    """Return the rows as an aligned text table."""
    cells = [_HEADERS, *((str(r.step), r.action, r.container, r.kind, r.cpus, r.mems, r.result)
                         for r in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_HEADERS) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line[:-1], widths, strict=True)) + "  " + line[-1]
             for line in cells]
    return "\n".join(line.rstrip() for line in lines)


def as_json(rows: Sequence[Row]) -> str:
    return json.dumps([{"step": r.step, "action": r.action, "container": r.container,
                        "kind": r.kind, "cpus": r.cpus, "mems": r.mems, "result": r.result}
                       for r in rows], indent=2)
