"""How long the plugin's own UpdateContainers call may go unanswered before the plugin takes
the runtime to be deadlocked and drops the connection (runtimes whose NRI locks can deadlock,
decision 23).

A fixed bound cannot serve every node: containerd applies a batch one runc update at a time,
and runc on a loaded node (or an emulated guest) takes seconds, not milliseconds. A call taken
for a deadlock that was only slow costs a reconnection and a full Synchronize, which on such a
node makes the next call slower still. So the bound learns: from the calls the runtime
answered (how long each container took), and from every call it gave up on (the next one waits
twice as long, up to a ceiling, so a slow runtime gets through and a real deadlock is still
freed within seconds)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cpuset_adapters.nri.session import NriSession, UpdateContainersError
from cpuset_core import ContainerUpdate

_log = logging.getLogger("nri_cpuset.daemon")

FLOOR: Final = 2.0
"""Seconds any call may take, however small its batch."""
SECONDS_PER_UPDATE: Final = 0.05
"""What containerd takes per container of a batch on a healthy node (one runc update each),
generously, before anything is learnt."""
MARGIN: Final = 4.0
"""How many times the slowest learnt seconds-per-container a batch may take."""
MOST_PATIENCE: Final = 8.0
"""The most the bound is stretched after calls given up on (a deadlock is held at most this
many times longer than the learnt bound)."""
CEILING: Final = 60.0
"""Seconds no call waits past: the runtime would be held that long by a real deadlock."""
FORGET: Final = 0.9
"""Each answered call keeps this much of the slowest pace learnt before it: a node that was
slow for a while is trusted to be fast again, gradually."""


@dataclass(slots=True)
class UpdatePatience:
    """The bound for the next call of ``count`` containers (:meth:`bound`), told what became of
    each call (:meth:`answered`, :meth:`given_up`)."""

    pace: float = 0.0
    """The slowest seconds per container among recently answered calls (0: none yet)."""
    stretch: float = 1.0
    """Doubled by each call given up on, halved by each answered one (1 to ``MOST_PATIENCE``)."""

    def bound(self, count: int) -> float:
        per_container = max(SECONDS_PER_UPDATE, MARGIN * self.pace)
        return min(CEILING, max(FLOOR, per_container * count) * self.stretch)

    def answered(self, count: int, seconds: float) -> None:
        if count > 0:
            self.pace = max(seconds / count, self.pace * FORGET)
        self.stretch = max(1.0, self.stretch / 2)

    def given_up(self) -> None:
        self.stretch = min(MOST_PATIENCE, self.stretch * 2)


async def send_patiently(session: NriSession, updates: Sequence[ContainerUpdate],
                         patience: UpdatePatience) -> None:
    """``session.apply_updates`` bounded by ``patience`` (which learns from the outcome):
    raises ``TimeoutError`` after the connection was dropped for an unanswered call."""
    count = len(updates)
    began = time.monotonic()
    try:
        await session.apply_updates(updates, timeout=patience.bound(count))
    except TimeoutError:
        patience.given_up()
        _log.warning("the next UpdateContainers call of the plugin's own may go unanswered "
                     "for %.1f s (%d containers) before it is taken for a deadlock",
                     patience.bound(count), count)
        raise
    except UpdateContainersError:  # an answer all the same: the runtime is not stuck
        patience.answered(count, time.monotonic() - began)
        raise
    patience.answered(count, time.monotonic() - began)
