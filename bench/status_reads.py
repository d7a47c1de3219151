"""Reading the plugin's status socket from another process while a bench runs (as ``inspect``
does): each read's time, and the reads that failed."""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@contextmanager
def reading_status(status_socket: Path | None, pace: float) -> Iterator[StatusReads]:
    """Read ``status_socket`` from another process (as ``inspect`` does) every ``pace``
    seconds, or without pause, while the block runs; yields the reads, filled in at the
    end. A nonstop reader also takes a CPU from the runtime on a small machine: the paced
    one shows what a hook waits for the document. A read that fails is counted and
    reported with the first error, not raised: the figure says it, the run goes on."""
    assert status_socket is not None
    reads = StatusReads()
    reader = subprocess.Popen(  # noqa: S603 - our interpreter, our module
        [sys.executable, "-c", _READER, str(status_socket), str(pace)],
        stdout=subprocess.PIPE, text=True)
    try:
        yield reads
    finally:
        reader.send_signal(signal.SIGINT)
        try:
            out, _ = reader.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            reader.kill()
            out, _ = reader.communicate()
            reads.fail("the reader did not stop within 30 s of SIGINT")
        reads.take(out)


@dataclass
class StatusReads:
    """What a status reader measured: each read's milliseconds, and the reads that failed."""

    times: list[float] = field(default_factory=list)
    failed: int = 0
    first_failure: str = ""

    def fail(self, why: str) -> None:
        self.failed += 1
        self.first_failure = self.first_failure or why

    def take(self, out: str) -> None:
        """Parse the reader's output (``_READER``)."""
        for line in out.splitlines():
            if line.startswith("failures "):
                self.failed += int(line.split()[1])
            elif line.startswith("failed "):
                self.first_failure = self.first_failure or line[len("failed "):]
            elif line.strip():
                self.times.append(float(line))

    def summary(self) -> str:
        text = f"{len(self.times)} reads"
        if self.times:
            text += f", p50 {statistics.median(self.times):.1f} ms"
        if self.failed:
            text += f"; {self.failed} failed (first: {self.first_failure})"
        return text


_READER = """
import signal, sys, time
from cpuset_adapters.status_socket import read_status
signal.signal(signal.SIGINT, signal.default_int_handler)
path, pace, times, failed = sys.argv[1], float(sys.argv[2]), [], []
try:
    while True:
        start = time.perf_counter()
        try:
            read_status(path)
            times.append((time.perf_counter() - start) * 1000)
        except OSError as err:
            failed.append(f"{type(err).__name__}: {err}")
        time.sleep(pace)
except KeyboardInterrupt:
    print("\\n".join(f"{t:.3f}" for t in times))
    print("\\n".join(f"failed {f}" for f in failed[:1]), f"failures {len(failed)}", sep="\\n")
"""
"""A status reader of its own (a process, like ``inspect``): prints each read's milliseconds.
SIGINT ends it, so it takes that signal's handler back: a shell that starts a job in the
background without job control (``bash -c '…' &``) leaves SIGINT ignored in everything the
job starts, and Python keeps an inherited SIG_IGN (the reader then outlived its SIGINT, in a
CI rehearsal run that way)."""
