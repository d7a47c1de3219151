"""One limit for every phase of a VM test (setup, call, teardown), so that a test that hangs
fails on its own, with every thread's stack, and the shape's other tests still run: a guest
that times out as a whole says nothing about where it stood (CI, 2026-12-06: the default shape
ran into its 2400 s limit inside ``test_numa_mems.py`` after 11 tests had passed).

Every wait in the tests has its own, scaled deadline; this guard is only for what has none
(a call blocked in the kernel, a wait forgotten). Its limit is far above the slowest phase seen
(162 s for a whole test under emulation, 2026-12-06): :data:`LIMIT`, or
``NRI_CPUSET_VM_TEST_LIMIT`` seconds.

At the limit, SIGALRM raises :class:`TestHung` in the main thread, after writing every
thread's stack to ``RESULTS/hung-tests.txt``. If the main thread is blocked where no signal
handler runs (uninterruptible in the kernel, e.g. on a cgroup lock another task holds),
faulthandler's own thread writes the stacks there a minute later under its ``Timeout (...)!``
line and ends pytest; the host, which reads that file, stops the guest as stalled and boots
it once more (``cpuset_lab.vm_heartbeat.stuck_in_kernel``): such a guest cannot even finish
its tests.
"""

from __future__ import annotations

import faulthandler
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Final, TextIO

from cpuset_lab.vm_heartbeat import HUNG_TESTS_FILE

LIMIT: Final = float(os.environ.get("NRI_CPUSET_VM_TEST_LIMIT", "900"))
BACKUP_AFTER: Final = 60.0
"""Seconds after the limit at which faulthandler's thread writes the stacks itself and ends
the process (the main thread did not take the signal: it is stuck in the kernel)."""
REPORT: Final = HUNG_TESTS_FILE


class TestHung(BaseException):
    """A test phase ran past :data:`LIMIT`. A ``BaseException``: the hung code's own ``except
    Exception`` must not swallow the guard (pytest reports it as that phase's failure)."""

    __test__ = False  # not a test class, whatever its name


@contextmanager
def guarded(what: str, results: Path, limit: float = LIMIT) -> Iterator[None]:
    """Run the body with the guard armed; ``what`` names the phase in the report."""
    with (results / REPORT).open("a") as report:
        def hung(signum: int, frame: FrameType | None) -> None:
            _write_stacks(report, f"{what}: still running after {limit:.0f} s")
            raise TestHung(f"{what} still running after {limit:.0f} s (the VM lab's per-test "
                           f"hang guard); every thread's stack is in {results / REPORT}")

        previous = signal.signal(signal.SIGALRM, hung)
        signal.setitimer(signal.ITIMER_REAL, limit)
        faulthandler.dump_traceback_later(limit + BACKUP_AFTER, file=report, exit=True)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            faulthandler.cancel_dump_traceback_later()
            signal.signal(signal.SIGALRM, previous)


def _write_stacks(report: TextIO, headline: str) -> None:
    report.write(f"== {headline}\n")
    report.flush()
    faulthandler.dump_traceback(file=report, all_threads=True)
    report.flush()
