"""`nri-cpuset run` as a child process of the lab, measured from outside: when it registered and
synchronized (read from its log), its memory and CPU time (``/proc``), its Prometheus metrics.

Benchmarks use it to time what an operator would see; nothing here reaches into the plugin.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from cpuset_lab import plugin_log

REGISTERED = "registered with the runtime"
"""What the plugin logs once the runtime accepted its registration."""


class PluginProcess:
    """One `nri-cpuset run` process at a time, logging JSON lines to ``log``."""

    def __init__(self, nri_socket: Path, log: Path, *, listen: str = "",
                 status_socket: Path | None = None, cri_socket: Path | None = None,
                 args: Sequence[str] = ()) -> None:
        self.nri_socket, self.log, self.listen = nri_socket, log, listen
        self.status_socket = status_socket
        self.cri_socket = cri_socket
        """The runtime's CRI socket (``None``: the plugin's default, which a lab lacks)."""
        self.args = tuple(args)
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        """``time.perf_counter()`` at the last exec."""

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the plugin is not running")
        return self.process.pid

    def command(self) -> list[str]:
        """What :meth:`start` runs: ``nri-cpuset run`` with this process's flags (a benchmark's
        other plugin, such as a no-op one, replaces it and keeps the rest)."""
        status = str(self.status_socket) if self.status_socket is not None else ""
        return [sys.executable, "-m", "cpuset_cli", "run", "--nri-socket",
                str(self.nri_socket), "--log-format", "json", "--listen", self.listen,
                "--status-socket", status,
                *(["--cri-socket", str(self.cri_socket)] if self.cri_socket else []),
                *self.args]

    def start(self) -> None:
        command = self.command()
        env = {**os.environ}
        env.pop("NRI_PLUGIN_SOCKET", None)  # never the pre-installed path
        with self.log.open("ab") as out:
            self.started_at = time.perf_counter()
            self.process = subprocess.Popen(command, stdout=out,  # noqa: S603 - our module
                                            stderr=subprocess.STDOUT, env=env)

    def text(self) -> str:
        """The log so far (``""`` before the first start made it)."""
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_for(self, what: str, count: int, *, timeout: float = 60.0,
                 poll: float = 0.01) -> float:
        """Wait until the log holds ``count`` of ``what`` (``"registered"`` or an event name
        such as ``"synchronized"``); return ``time.perf_counter()`` when seen (the poll interval
        bounds the error). Only what the log gained is read at each poll: a dense node's log
        grows by megabytes, and rereading it would take a CPU from the plugin being timed."""
        deadline = time.perf_counter() + timeout
        seen, offset, partial = 0, 0, b""
        while True:
            with self.log.open("rb") as log:
                log.seek(offset)
                data = partial + log.read()
            offset += len(data) - len(partial)
            complete, _, partial = data.rpartition(b"\n")
            seen += _count(complete.decode(errors="replace"), what)
            now = time.perf_counter()
            if seen >= count:
                return now
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the plugin exited ({self.process.returncode}):\n"
                                   f"{self.text()[-3000:]}")
            if now > deadline:
                raise TimeoutError(f"no {what} #{count} within {timeout} s:\n"
                                   f"{self.text()[-3000:]}")
            time.sleep(poll)

    def count(self, what: str) -> int:
        """How many ``what`` (as :meth:`wait_for` takes it) the log holds so far."""
        return _count(self.text(), what)

    def next_join(self, action: Callable[[], object]) -> tuple[float, float]:
        """Run ``action`` (a start, a runtime restart); return ``time.perf_counter()`` when
        the plugin next registered and next synchronized."""
        registered, synchronized = self.count("registered"), self.count("synchronized")
        action()
        return (self.wait_for("registered", registered + 1),
                self.wait_for("synchronized", synchronized + 1))

    def stop(self) -> int:
        """SIGTERM and wait; return the exit code."""
        process = self._take()
        process.send_signal(signal.SIGTERM)
        return process.wait(timeout=30)

    def kill(self) -> None:
        """SIGKILL (``kill -9``) and reap."""
        process = self._take()
        process.kill()
        process.wait(timeout=30)

    def _take(self) -> subprocess.Popen[bytes]:
        if self.process is None:
            raise RuntimeError("the plugin is not running")
        process, self.process = self.process, None
        return process

    # -- measured from outside ------------------------------------------------------------------

    def memory_kib(self) -> dict[str, int]:
        """``VmRSS`` and ``VmHWM`` (peak) in KiB."""
        found = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in {"VmRSS", "VmHWM"}:
                found[key] = int(value.split()[0])
        return found

    def cpu_seconds(self) -> float:
        """User + system CPU time since exec."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # After the ")" closing the command name: state is field 3, utime 14, stime 15.
        ticks = int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def metric_sums(self, name: str, label: str) -> dict[str, float]:
        """The samples of ``name`` in ``/metrics`` summed by the value of ``label`` (other
        labels pooled), e.g. every hook's ``nri_cpuset_hook_duration_seconds_sum``."""
        sums: dict[str, float] = {}
        for labels, value in self._samples(name):
            key = labels.get(label, "").strip('"')
            sums[key] = sums.get(key, 0.0) + value
        return sums

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        """The value of one sample of ``/metrics`` (0 when absent), e.g.
        ``metric("nri_cpuset_hook_duration_seconds_sum", {"hook": "CreateContainer"})``."""
        wanted = labels or {}
        return sum(value for pairs, value in self._samples(name)
                   if all(pairs.get(k) == f'"{v}"' for k, v in wanted.items()))

    def _samples(self, name: str) -> list[tuple[dict[str, str], float]]:
        """Every sample of ``name`` in ``/metrics``: its labels (values still quoted) and
        value."""
        if not self.listen:
            raise RuntimeError("the plugin was started without --listen")
        with urllib.request.urlopen(f"http://{self.listen}/metrics", timeout=10) as response:
            body = response.read().decode()
        found = []
        for line in body.splitlines():
            if not line.startswith(name) or line.startswith("#"):
                continue
            head, _, value = line.rpartition(" ")
            metric, _, label_text = head.partition("{")
            if metric != name:
                continue
            pairs = dict(part.split("=", 1) for part in label_text.rstrip("}").split(",") if part)
            found.append((pairs, float(value)))
        return found


def _count(text: str, what: str) -> int:
    return (text.count(REGISTERED) if what == "registered"
            else len(plugin_log.events(text, what)))
