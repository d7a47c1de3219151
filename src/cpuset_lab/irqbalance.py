"""A real irqbalance for the quiet-CPU tests (issue 43): Debian's binary as
``scripts/install-irqbalance`` unpacks it (never its service), run in the foreground with its
own defaults (a rebalancing round every 10 s) and ``--debug`` so that its rounds can be counted
in its output, and asked through its socket what it bans. Only ever run while holding
:func:`cpuset_lab.quiet_host.held`: it moves the host's interrupts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cpuset_adapters.quiet.irqbalance import Irqbalances
from cpuset_core import CPUSet
from cpuset_lab.containerd_install import lab_dir

SOCKETS = Path("/run/irqbalance")
"""Where 1.9.2 binds its socket (its unit's RuntimeDirectory); without it, an unnamed one."""
ROUND = "-----------------------------------------------------------------------------"
"""The line ``--debug`` prints after each round's tree."""


def binary() -> Path:
    return lab_dir() / "irqbalance/usr/sbin/irqbalance"


def installed() -> bool:
    return os.access(binary(), os.X_OK)


@dataclass
class Running:
    """One irqbalance started by :func:`running`."""

    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def rounds(self) -> int:
        """Rounds finished so far (each prints its tree in debug mode)."""
        return self.log.read_text(errors="replace").count(ROUND)

    def banned(self) -> CPUSet | None:
        """What it bans since its last topology scan (``Banned CPUs:`` in its debug output);
        ``None`` before the first. Read from its output, not asked on its socket: it sleeps a
        whole interval inside a rescan, and a test asking meanwhile would only queue up."""
        lines = [line for line in self.log.read_text(errors="replace").splitlines()
                 if line.startswith("Banned CPUs:")]
        if not lines:
            return None
        return CPUSet.from_mask(int(lines[-1].split(":", 1)[1].strip().replace(",", ""), 16))

    def setup(self) -> str:
        """Its ``setup`` answer (sleep interval, banned mask); raises OSError while it cannot
        answer."""
        return Irqbalances(timeout=1.0).send(self.pid, "setup", answer=True)


@contextmanager
def running(log: Path, env: dict[str, str] | None = None) -> Iterator[Running]:
    """irqbalance in the foreground until the block ends (then killed)."""
    made = not SOCKETS.exists()
    SOCKETS.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603 - the lab's own binary; stdbuf: its lines as printed
            ["/usr/bin/stdbuf", "-oL", str(binary()), "--foreground", "--debug"], stdout=out,
            stderr=subprocess.STDOUT, env={"PATH": os.environ.get("PATH", ""), **(env or {})})
    try:
        yield Running(process, log)
    finally:
        process.kill()
        process.wait(timeout=10)
        (SOCKETS / f"irqbalance{process.pid}.sock").unlink(missing_ok=True)
        if made:
            SOCKETS.rmdir()
