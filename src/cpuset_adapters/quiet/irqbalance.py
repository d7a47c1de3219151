"""Running irqbalance daemons told which CPUs to leave alone while CPUs are quiet, and given
their own set back after (issue 43), so that one rebalancing round every 10 s does not undo the
affinities the applier writes.

Found by ``/proc/PID/comm``; what each bans by itself from its environment and the kernel's
isolated and ``nohz_full`` CPUs (:func:`cpuset_core.irqbalance.own_banned`). Told on its
socket, with the root credentials it checks (``SCM_CREDENTIALS``): irqbalance 1.9.2 binds
``/run/irqbalance/irqbalance<PID>.sock`` (the directory its unit creates); older releases, and
1.9.2 when that directory is missing, an abstract socket, tried as ``@irqbalance<PID>.sock``
(1.9.2's fallback binds an all-zero abstract name no client can tell apart: such a daemon is
reported, not told). Each daemon told is journaled first (``irqbalance:<PID>`` with its own
set), so a plugin killed -9 gives it back at its next start.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from cpuset_adapters.quiet.journal import QuietJournal
from cpuset_core.cpuset import CPUSet
from cpuset_core.irqbalance import GIVE_BACK, ban_message, own_banned

JOURNAL_PREFIX: Final = "irqbalance:"
"""Journal keys of daemons told (the rest are file paths)."""
TIMEOUT: Final = 2.0
"""Seconds to reach a daemon: irqbalance sleeps a whole interval inside a rescan (1.9.2's
``sleep_approx``) and accepts nothing meanwhile; the next pass tries again."""


@dataclass(frozen=True, slots=True)
class Balancer:
    """One running irqbalance and the CPUs it bans by itself."""

    pid: int
    own: CPUSet


class Report(Protocol):
    @property
    def changed(self) -> list[str]: ...
    @property
    def restored(self) -> list[str]: ...
    @property
    def problems(self) -> list[str]: ...


class Irqbalances:
    """The node's irqbalance daemons under ``proc_root``, ``sys_root`` and ``run_root``."""

    def __init__(self, proc_root: str | Path = "/proc", sys_root: str | Path = "/sys",
                 run_root: str | Path = "/run", timeout: float = TIMEOUT) -> None:
        self.proc = Path(proc_root)
        self.cpu = Path(sys_root) / "devices/system/cpu"
        self.run = Path(run_root)
        self.timeout = timeout

    def running(self) -> list[Balancer]:
        """Every irqbalance running now, by PID (one that exits meanwhile is left out)."""
        found = []
        for pid in self._pids():
            try:
                environ = self._environ(pid)
            except (OSError, ValueError):
                continue  # gone, or not ours to read
            try:
                own = own_banned(environ, self._cpus("isolated"), self._cpus("nohz_full"))
            except ValueError:
                own = CPUSet()  # irqbalance could not parse it either: it bans nothing
            found.append(Balancer(pid, own))
        return found

    def alive(self, pid: int) -> bool:
        return pid in set(self._pids([str(pid)]))

    def send(self, pid: int, message: str) -> str:
        """Send ``message`` to irqbalance ``pid`` and return its answer (``settings`` get
        none). Raises OSError when it cannot be reached."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(self.timeout)
            sock.connect(self._address(pid))
            credentials = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())
            sock.sendmsg([message.encode()],
                         [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, credentials)])
            sock.shutdown(socket.SHUT_WR)
            return b"".join(iter(lambda: sock.recv(4096), b"")).decode(errors="replace")

    def _address(self, pid: int) -> str:
        path = self.run / "irqbalance" / f"irqbalance{pid}.sock"
        return str(path) if path.exists() else f"\0irqbalance{pid}.sock"

    def _pids(self, names: list[str] | None = None) -> Iterator[int]:
        for name in names if names is not None else os.listdir(self.proc):
            if not name.isdigit():
                continue
            try:
                comm = (self.proc / name / "comm").read_text().strip()
            except OSError:
                continue
            if comm == "irqbalance":
                yield int(name)

    def _environ(self, pid: int) -> dict[str, str]:
        raw = (self.proc / str(pid) / "environ").read_bytes()
        pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0")
                 if item)
        return {key: value for key, _, value in pairs}

    def _cpus(self, name: str) -> CPUSet:
        try:
            return CPUSet.parse((self.cpu / name).read_text(), allow_empty=True)
        except (OSError, ValueError):
            return CPUSet()  # no such file (no nohz_full): nothing banned for it


class IrqbalanceTeller:
    """Keeps every running irqbalance off the quiet CPUs, journaled, and gives each back."""

    def __init__(self, daemons: Irqbalances, journal: QuietJournal) -> None:
        self.daemons = daemons
        self.journal = journal
        self._told: dict[int, str] = {}
        """What each daemon was last sent by this process (a restart sends it again)."""

    def tell(self, quiet: CPUSet, report: Report) -> None:
        """Tell every daemon ``quiet`` (give back when empty); what cannot be said goes to
        ``report.problems`` and is tried at the next pass. Raises JournalError (nothing sent)."""
        journaled = {int(key[len(JOURNAL_PREFIX):]) for key in self.journal.originals
                     if key.startswith(JOURNAL_PREFIX)}
        if not quiet and not journaled:
            return  # nothing to say: /proc is not even read
        running = {daemon.pid: daemon for daemon in self.daemons.running()} if quiet else {}
        for pid in sorted(journaled - set(running)):
            if quiet or not self.daemons.alive(pid):
                self._forget(pid)  # gone: nothing left to give back
                continue
            try:
                self.daemons.send(pid, GIVE_BACK)
            except OSError as exc:
                report.problems.append(f"irqbalance {pid}: cannot give back its CPUs: {exc}")
                continue
            self._forget(pid)
            report.restored.append(f"irqbalance {pid}: {GIVE_BACK}")
        for pid, daemon in running.items():
            message = ban_message(daemon.own, quiet)
            if self._told.get(pid) == message:
                continue
            self.journal.remember(f"{JOURNAL_PREFIX}{pid}", daemon.own.format())
            self.journal.save()  # before it is told: a kill -9 after can be undone
            try:
                self.daemons.send(pid, message)
            except OSError as exc:
                report.problems.append(f"irqbalance {pid}: cannot be told {message!r}: {exc}")
                continue
            self._told[pid] = message
            report.changed.append(f"irqbalance {pid}: {message}")
        self.journal.save()  # daemons given back or gone are forgotten on disk too

    def _forget(self, pid: int) -> None:
        self.journal.forget(f"{JOURNAL_PREFIX}{pid}")
        self._told.pop(pid, None)
