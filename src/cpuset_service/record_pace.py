"""When the runtime's records may go in calls of the plugin's own: never across a creation or a
start.

On a runtime whose NRI locks cannot deadlock (NRI v0.12.1 or later, decision 51) the pusher
sends the record of what the kernel fast path wrote in UpdateContainers calls of its own. Each
call holds the runtime's NRI lock for a runc update, and every CRI call that reaches NRI waits
for that lock: the new container's CreateContainer and PostCreateContainer, its StartContainer
and PostStartContainer (the plugin sees only some of them). Sent at once after an integer
creation, 200 records made that container's create and start wait behind them (issue 45). So
a record-only call goes only when

1. no container the plugin admitted still waits for its start, nor one whose start began
   (StartContainer) waits for its PostStartContainer (where the runtime sends it: the plugin
   subscribes to it where it makes these calls), each for at most :data:`HOLD_LIMIT` seconds
   from when the pace first saw it (a container the kubelet gave up on may never start; its
   record lag harms nothing: decision 51), and
2. the runtime has been quiet for :data:`RECORD_QUIET` seconds: a pod's next call (its next
   container, another pod's creation) follows the last one closely, and without
   PostStartContainer the start's tail (runc start, then PostStartContainer) follows the
   StartContainer the plugin answered.

Both are asked again before every call, so a lifecycle event arriving during the catch-up makes
the next call wait for the quiet again. What a call already in flight holds, a call the plugin
could not see coming (another pod's RunPodSandbox) waits for: one call of
:data:`~cpuset_service.kernel_first.RECORD_BATCH` runc updates at most. No clock is read here:
the daemon gives the pace its clock and how long the runtime has been quiet.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection

RECORD_QUIET = 0.25
"""Seconds without a runtime call before a record-only call of the plugin's own: longer than
the gaps between one pod's calls, and than a start's tail after its StartContainer (a runc
start and PostStartContainer, tens of ms) where the runtime does not say when it ends."""
HOLD_LIMIT = 5.0
"""Seconds a container waiting for its start holds the records back at most."""


def _no_containers() -> Collection[str]:
    return ()


class RecordPace:
    """Says whether a record-only call may go now. Unwired (the defaults), it always may: the
    daemon wires the runtime's quiet, the containers waiting for their start, and the clock."""

    def __init__(self) -> None:
        self.waiting: Callable[[], Collection[str]] = _no_containers
        """Containers admitted and not seen to start (the service's start tracker)."""
        self.quiet_for: Callable[[], float] = lambda: math.inf
        """Seconds since the runtime's last call was answered."""
        self.clock: Callable[[], float] = lambda: 0.0
        """A monotonic clock, in seconds."""
        self._since: dict[str, float] = {}
        """When the pace first saw each container waiting for its start."""
        self._starting: dict[str, float] = {}
        """Containers whose start began, until their PostStartContainer: since when."""

    def may_send(self) -> bool:
        """Whether a record-only call may go now (see the module's rule)."""
        return not self.holding() and self.quiet_for() >= RECORD_QUIET

    def starting(self, container_id: str) -> None:
        """Its start began (StartContainer), and the runtime will say when it has gone by."""
        self._starting[container_id] = self.clock()

    def started(self, container_id: str) -> None:
        """Its start has gone by (PostStartContainer)."""
        self._starting.pop(container_id, None)

    def holding(self) -> bool:
        """Whether a creation or a start is under way: a container admitted and not started,
        or started and not past its PostStartContainer, each within :data:`HOLD_LIMIT`."""
        now = self.clock()
        self._since = {cid: self._since.get(cid, now) for cid in self.waiting()}
        self._starting = {cid: since for cid, since in self._starting.items()
                          if now - since < HOLD_LIMIT}
        return bool(self._starting) or any(now - since < HOLD_LIMIT
                                           for since in self._since.values())

    def reset(self) -> None:
        """The connection is gone: what waited is decided again at the next rebuild."""
        self._since.clear()
        self._starting.clear()
