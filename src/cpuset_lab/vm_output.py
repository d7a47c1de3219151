"""What a VM lab guest prints, as the host watches it: its console copied (QEMU's noise left
out) with a stalled guest noticed, its log echoed line by line under the shape's name, and a
failed shape explained with the end of the log that says most."""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
from pathlib import Path
from typing import BinaryIO, Final, TextIO

from cpuset_lab.vm_heartbeat import HUNG_TESTS_FILE
from cpuset_lab.vm_results import Outcome, ShapeResult

QEMU_NOISE: Final = re.compile(r"TCG doesn't support requested feature")
LOCKUP: Final = re.compile(r"soft lockup - CPU#\d+ stuck for (\d+)s")
KERNEL_TROUBLE: Final = re.compile(
    r"soft lockup|rcu.*(stall|self-detected)|blocked for more than|BUG:|Oops|WARNING:|"
    r"Call Trace|hung_task|Kernel panic")
STALL_LIMIT: Final = 120
"""Seconds a guest CPU may be reported stuck before the guest counts as stalled: software
emulation of 8 CPUs on 2 host cores was seen to livelock a guest kernel for good (every CPU
stuck in IPIs for minutes, no test progressing), which only a new boot cures."""


class Tail(threading.Thread):
    """Echoes the lines the guest appends to ``guest.log``, prefixed with the shape's name."""

    def __init__(self, path: Path, prefix: str, out: TextIO) -> None:
        super().__init__(daemon=True)
        self.path, self.prefix, self.out = path, prefix, out
        self.done = threading.Event()

    def run(self) -> None:
        offset = 0
        while True:
            finished = self.done.wait(1.0)
            with contextlib.suppress(OSError):
                with self.path.open("rb") as log:
                    log.seek(offset)
                    chunk = log.read()
                cut = chunk.rfind(b"\n") + 1 if not finished else len(chunk)
                for line in chunk[:cut].decode(errors="replace").splitlines():
                    self.out.write(f"[{self.prefix}] {line}\n")
                self.out.flush()
                offset += cut
            if finished:
                return


def copy_console(proc: subprocess.Popen[bytes], console: BinaryIO,
                 stalled: threading.Event) -> None:
    """Copy the guest's console into ``console`` (QEMU's noise left out); set ``stalled``
    when the guest reports a CPU stuck for :data:`STALL_LIMIT` seconds or more."""
    assert proc.stdout is not None
    for line in proc.stdout:
        text = line.decode(errors="replace")
        if not QEMU_NOISE.search(text):
            console.write(line)
            console.flush()
        lockup = LOCKUP.search(text)
        if lockup and int(lockup.group(1)) >= STALL_LIMIT:
            stalled.set()


def explain(result: ShapeResult, results: Path) -> str:
    """Why a shape failed, with the end of the log that says most."""
    code = _read_text(results / "vng.rc").strip() or "?"
    lines = [f"{result.shape}: {result.outcome.value}: {result.detail} (virtme-ng exit code "
             f"{code})"]
    lines += [f"  not passed: {test}" for test in result.failed_tests]
    log = ("console.log" if result.outcome in (Outcome.NOT_BOOTED, Outcome.STALLED)
           else "guest.log")
    with contextlib.suppress(OSError):
        tail = (results / log).read_text(errors="replace").splitlines()[-30:]
        lines.append(f"  --- last {len(tail)} lines of {results / log}:")
        lines += [f"  {line}" for line in tail]
    hung = _read_text(results / HUNG_TESTS_FILE).splitlines()[-40:]
    if hung:
        lines.append(f"  --- the hang guard's report, last {len(hung)} lines "
                     f"({results / HUNG_TESTS_FILE}):")
        lines += [f"  {line}" for line in hung]
    if log != "console.log":
        warnings = kernel_warnings(_read_text(results / "console.log"))
        if warnings:
            lines.append(f"  --- the guest kernel's last {len(warnings)} warnings "
                         f"({results / 'console.log'}):")
            lines += [f"  {line}" for line in warnings]
    return "\n".join(lines)


def kernel_warnings(console: str, keep: int = 20) -> list[str]:
    """The last ``keep`` lines of a guest console that say the kernel was stuck or hurt (soft
    lockups, RCU stalls, tasks blocked for minutes, BUGs, oopses, warnings): what tells a hung
    test from a hung guest when a shape times out."""
    return [line for line in console.splitlines() if KERNEL_TROUBLE.search(line)][-keep:]


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
