"""systemd as the scope writer sees it (:class:`FakeBus`), a clock to move by hand and the
writer's outcome counts, for the systemd writer's tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cpuset_adapters.systemd.bus import BusError
from cpuset_adapters.systemd.call import UnitCpuset


@dataclass
class FakeBus:
    """systemd as the writer sees it; ``files`` is the scope's cpuset.cpus, read at each call
    (to tell whether the unit was set before the file was written)."""

    files: Path | None = None
    refuse: BusError | None = None
    """Raised by :meth:`connect`."""
    fail: BusError | None = None
    """Raised by :meth:`set_cpusets` (the connection lost mid-call): nothing recorded."""
    problems: dict[str, str] = field(default_factory=dict)
    calls: list[list[UnitCpuset]] = field(default_factory=list)
    file_at_call: list[str] = field(default_factory=list)
    connects: int = 0
    waits: list[float] = field(default_factory=list)
    version: str = "252"
    connected: bool = False

    def connect(self, wait: float = 1.0) -> str:
        self.connects += 1
        self.waits.append(wait)
        if self.refuse is not None:
            raise self.refuse
        self.connected = True
        return self.version

    def set_cpusets(self, requests: Sequence[UnitCpuset], wait: float) -> dict[str, str]:
        if self.fail is not None:
            self.connected = False
            raise self.fail
        self.calls.append(list(requests))
        if self.files is not None:
            self.file_at_call.append(self.files.read_text().strip())
        return {unit: p for unit, p in self.problems.items() if unit in
                {r.unit for r in requests}}

    def close(self) -> None:
        self.connected = False


@dataclass
class Clock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Counts:
    seen: dict[str, int] = field(default_factory=dict)

    def __call__(self, outcome: str, containers: int) -> None:
        self.seen[outcome] = self.seen.get(outcome, 0) + containers
