"""The guest's proof of life, watched from the host.

``scripts/vm-guest`` writes its uptime to ``RESULTS/heartbeat`` every few seconds from a shell
loop that forks ``sleep`` each round. A guest whose kernel has livelocked (every vCPU stuck in
inter-processor calls under software emulation) or whose cgroup machinery is wedged (a fork
waits on the cgroup locks) stops beating, whatever its console says; a guest that is merely
slow still beats. The host stops a guest that has been silent for :data:`SILENCE_LIMIT` and
boots it once more, as it does for a stalled kernel (``vm_output.STALL_LIMIT``).

A test that hangs while the guest lives is the guest's own per-test guard's
(``tests/vm/hang_guard.py``): it fails that test with every thread's stack. Only a test whose
process is stuck in the kernel (it never takes the guard's signal) is this module's too: the
guard's last resort writes faulthandler's ``Timeout (...)!`` report into ``hung-tests.txt``,
and :func:`stuck_in_kernel` reads it as a stall.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

HEARTBEAT_FILE: Final = "heartbeat"
HUNG_TESTS_FILE: Final = "hung-tests.txt"
"""Written by the guest's hang guard (``tests/vm/hang_guard.REPORT``)."""
SILENCE_LIMIT: Final = 180.0
"""Host seconds without a new beat before the guest counts as stalled. A beat is due every 5
guest seconds; the worst pause seen in a guest that went on to pass was a soft lockup of 52 s
(2026-11-28, docs/vm-lab.md), so three minutes is no slow guest's. A guest that stopped
(2026-12-06) never beat again: waiting longer only delays its second boot."""


@dataclass(slots=True)
class Heartbeat:
    """What the host has seen of one guest's beats. ``look(now)`` reads the file; ``silence``
    says why the guest counts as stalled, or ``""``."""

    path: Path
    limit: float = SILENCE_LIMIT
    _last: str | None = field(default=None, init=False)
    _changed_at: float | None = field(default=None, init=False)

    def look(self, now: float) -> None:
        """Note the file's content at host time ``now`` (a missing file is no beat yet)."""
        try:
            beat = self.path.read_text().strip()
        except OSError:
            return
        if beat and beat != self._last:
            self._last, self._changed_at = beat, now

    def silence(self, now: float) -> str:
        """Why the guest counts as stalled at host time ``now``: ``""`` before its first beat
        (the boot limit covers that) and while it beats."""
        if self._changed_at is None or now - self._changed_at < self.limit:
            return ""
        return (f"the guest's heartbeat stopped: its last beat (guest uptime {self._last} s) "
                f"came {now - self._changed_at:.0f} s ago (limit {self.limit:.0f} s); its kernel "
                f"or its cgroup machinery stopped making progress")


def stuck_in_kernel(results: Path) -> str:
    """Why the guest counts as stalled because a test's process stood in the kernel past its
    hang guard (faulthandler's last-resort report in ``hung-tests.txt``), or ``""``."""
    try:
        report = (results / HUNG_TESTS_FILE).read_text(errors="replace")
    except OSError:
        return ""
    if "\nTimeout (" not in f"\n{report}":
        return ""
    hung = [line.removeprefix("== ") for line in report.splitlines() if line.startswith("== ")]
    where = hung[-1] if hung else "a test (the last one guest.log names) hung"
    return (f"{where}, and its process did not take the hang guard's signal for a minute: "
            f"it is stuck in the guest kernel (every thread's stack: {results / HUNG_TESTS_FILE})")
