"""A soak's history: one JSON object per line, the header first (seed, runtime, machine), then
every operation with its step number, written as it runs, so a violation can be replayed with
``--replay FILE`` (the same operations in the same order; timing is not replayed)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

FORMAT: Final = 1
Op = dict[str, Any]
"""One operation: ``{"kind": "create", "pod": "p3", ...}``; the keys each kind takes are
those its operation reads (``dispatch.DISPATCH``, drawn by ``walk``)."""


class HistoryError(ValueError):
    """A history file that cannot be replayed (names the line and what is wrong)."""


@dataclass(frozen=True, slots=True)
class Header:
    seed: int
    runtime: str
    online: str
    minutes: float

    def to_json(self) -> str:
        return json.dumps({"soak": FORMAT, "seed": self.seed, "runtime": self.runtime,
                           "online": self.online, "minutes": self.minutes})


@dataclass(frozen=True, slots=True)
class Step:
    """The operations of one step: run back to back, then the node settles and is checked."""

    number: int
    ops: list[Op] = field(default_factory=list)


class HistoryWriter:
    """Appends each step's operations as they run (flushed: a crash keeps what ran), each with
    the seconds since the run began (``at``: how long an operation took shows when a slow one
    is looked into; a replay ignores it)."""

    def __init__(self, out: IO[str], header: Header) -> None:
        self.out = out
        self.began = time.monotonic()
        out.write(header.to_json() + "\n")
        out.flush()

    def write(self, step: int, op: Op) -> float:
        """Writes ``op``; returns its ``at``."""
        at = round(time.monotonic() - self.began, 1)
        self.out.write(json.dumps({"step": step, "at": at, "op": op}, sort_keys=True) + "\n")
        self.out.flush()
        return at


def parse(lines: Iterable[str], *, source: str = "history") -> tuple[Header, list[Step]]:
    """The header and the steps of a history; ``HistoryError`` naming the line otherwise."""
    header: Header | None = None
    steps: list[Step] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            record = json.loads(line)
        except ValueError as err:
            raise HistoryError(f"{where}: not JSON ({err})") from None
        if not isinstance(record, dict):
            raise HistoryError(f"{where}: expected an object, got {type(record).__name__}")
        if header is None:
            header = _header(record, where)
            continue
        step, op = record.get("step"), record.get("op")
        if not isinstance(step, int) or not isinstance(op, dict) or not isinstance(
                op.get("kind"), str):
            raise HistoryError(f"{where}: expected {{\"step\": N, \"op\": {{\"kind\": ...}}}}")
        if steps and step < steps[-1].number:
            raise HistoryError(f"{where}: step {step} after step {steps[-1].number}")
        if not steps or steps[-1].number != step:
            steps.append(Step(step))
        steps[-1].ops.append(op)
    if header is None:
        raise HistoryError(f"{source}: empty (no header line)")
    return header, steps


def _header(record: dict[str, Any], where: str) -> Header:
    if record.get("soak") != FORMAT:
        raise HistoryError(f"{where}: not a soak history of format {FORMAT} "
                           f"(header {record!r})")
    try:
        return Header(seed=int(record["seed"]), runtime=str(record["runtime"]),
                      online=str(record["online"]), minutes=float(record["minutes"]))
    except (KeyError, TypeError, ValueError) as err:
        raise HistoryError(f"{where}: bad header ({err!r})") from None


def read(path: Path) -> tuple[Header, list[Step]]:
    with path.open(encoding="utf-8") as lines:
        return parse(lines, source=str(path))


def ops_of(steps: Iterable[Step]) -> Iterator[tuple[int, Op]]:
    for step in steps:
        for op in step.ops:
            yield step.number, op
