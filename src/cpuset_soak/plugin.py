"""The plugin the soak runs (``parts.PluginControls``): ``nri-cpuset run`` as a child process
with its configuration file and status socket, what its log says (Synchronizes, reloads, the
containers it refused) and what the soak measures of it from outside (its state document, RSS
and open descriptors)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from cpuset_adapters.status_socket import read_status
from cpuset_core.cpuset import CPUSet
from cpuset_lab.plugin_log import events
from cpuset_lab.plugin_process import PluginProcess

from .parts import Pace


class Rejections:
    """The containers the plugin's log says it refused (``reject`` events), by short id, read
    as the log grows (a long run's log is megabytes: only what is new is read)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.offset = 0
        self.ids: set[str] = set()

    def refused(self, container_id: str) -> bool:
        with self.log.open("rb") as text:
            text.seek(self.offset)
            new = text.read()
        complete = new[:new.rfind(b"\n") + 1]  # a line being written is read next time
        self.offset += len(complete)
        self.ids.update(str(e.get("id", "")) for e in events(complete.decode(errors="replace"),
                                                               "reject"))
        return container_id[:12] in self.ids


class LabPlugin:
    """``nri-cpuset run`` on ``nri_socket``, its files in ``workdir``: the configuration
    (``reserved``, ``strict_reservation``, ``verify_period`` and the pace's ``start_grace``
    fixed, ``pinning.namespaces`` rewritten by reloads), ``plugin.log`` and
    ``status/status.sock``; quiet CPUs (``quiet``) journaled in the run's own directory, else
    off: the default journal is the host's, another lab's plugin would put back ours."""

    def __init__(self, workdir: Path, nri_socket: Path, *, cri_socket: Path,
                 reserved: CPUSet, strict_reservation: bool, verify_period: int,
                 pace: Pace, quiet: bool = False) -> None:
        status = workdir / "status"
        status.mkdir(mode=0o700, exist_ok=True)
        (workdir / "plugin.log").touch()
        self.config = workdir / "config.toml"
        self.reserved, self.strict_reservation = reserved, strict_reservation
        self.verify_period, self.pace = verify_period, pace
        self.process = PluginProcess(nri_socket, workdir / "plugin.log",
                                     status_socket=status / "status.sock",
                                     cri_socket=cri_socket,
                                     args=("--config", str(self.config), "--quiet-journal",
                                           str(workdir / "quiet-originals.json") if quiet
                                           else ""))
        self.rejections = Rejections(workdir / "plugin.log")
        self.up = False

    @property
    def status_socket(self) -> Path:
        assert self.process.status_socket is not None
        return self.process.status_socket

    def refused(self, container_id: str) -> bool:
        return self.rejections.refused(container_id)

    def write_config(self, namespaces: tuple[str, ...]) -> None:
        listed = ", ".join(json.dumps(n) for n in namespaces)
        self.config.write_text(
            f"[pinning]\nnamespaces = [{listed}]\n\n[cpus]\n"
            f"reserved = {json.dumps(self.reserved.format())}\n"
            f"strict_reservation = {str(self.strict_reservation).lower()}\n\n"
            f"[runtime]\nverify_period = {self.verify_period}\n"
            f"start_grace = {self.pace.start_grace}\n\n"
            "[observability]\nlisten = \"\"\nlog_level = \"info\"\n")

    def restart(self) -> None:
        synchronized = self.synchronizations()
        self.process.start()
        self.process.wait_for("synchronized", synchronized + 1,
                              timeout=self.pace.seconds(60))
        self.up = True

    def kill(self) -> None:
        self.up = False
        self.process.kill()

    def pause(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)
        self.up = False

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def synchronizations(self) -> int:
        return self.process.count("synchronized")

    def reload(self, namespaces: tuple[str, ...]) -> None:
        self.write_config(namespaces)
        os.kill(self.process.pid, signal.SIGHUP)

    def reloads(self) -> int:
        text = self.process.text()
        return text.count(": applied ") + text.count("configuration unchanged")

    def state(self) -> dict[str, Any]:
        # Scaled: an emulated guest's plugin, just restarted, answers between its catch-up's
        # slices, seconds apart (a VM soak once stopped on the unscaled 5 s).
        document: dict[str, Any] = json.loads(read_status(self.status_socket,
                                                          timeout=self.pace.seconds(5)))
        return document

    def inspect(self) -> dict[str, Any]:
        """The same document through the operator's command, ``nri-cpuset inspect -o json``."""
        done = subprocess.run(  # noqa: S603 - our interpreter, our module
            [sys.executable, "-m", "cpuset_cli", "inspect", "--status-socket",
             str(self.status_socket), "-o", "json"],
            capture_output=True, text=True, timeout=self.pace.seconds(60), check=True)
        document: dict[str, Any] = json.loads(done.stdout)
        return document

    def measure(self) -> tuple[int, int, int]:
        """(pid, VmRSS KiB, open descriptors) of its process now."""
        pid = self.process.pid
        rss = self.process.memory_kib()["VmRSS"]
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return pid, rss, fds

    def close(self) -> None:
        if self.process.process is not None:
            self.process.stop()
