"""The node the soak runs on: the lab's containerd (the runtime ``--runtime`` chose), the
plugin as a child process with its configuration file and status socket, and what the soak
measures from outside (its state document, RSS and open descriptors)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cpuset_adapters.status_socket import read_status
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import Installation
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.plugin_log import events
from cpuset_lab.plugin_process import PluginProcess

from .model import Node

REQUEST_TIMEOUT: Final = 2.0
"""The runtime's NRI request timeout the lab configures (seconds, times ``--time-scale``)."""


@dataclass(slots=True)
class Tally:
    """What the run did and found, for the closing line."""

    ops: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    checks: int = 0
    violations: list[str] = field(default_factory=list)
    settles: list[float] = field(default_factory=list)
    """Seconds from a step's end until its eventual invariants held."""
    memory: list[tuple[int, int, int]] = field(default_factory=list)
    """(plugin pid, VmRSS KiB, open descriptors) at each settle."""


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


class LabNode:
    """containerd + ``nri-cpuset run`` in ``workdir``; ``verify_period`` goes to the plugin's
    configuration (the soak settles for that long after each step); every wait is ``scale``
    times longer (an emulated guest)."""

    def __init__(self, workdir: Path, installation: Installation, model: Node,
                 verify_period: int, scale: float = 1.0) -> None:
        self.workdir = workdir
        self.model = model
        self.verify_period = verify_period
        self.scale = scale
        self.request_timeout = REQUEST_TIMEOUT * scale
        self.lab = LabContainerd(workdir / "lab", installation=installation,
                                 request_timeout=f"{self.request_timeout:g}s",
                                 registration_timeout=f"{5 * scale:g}s",
                                 start_timeout=120 * scale)
        status = workdir / "status"
        status.mkdir(mode=0o700, exist_ok=True)
        (workdir / "plugin.log").touch()
        self.config = workdir / "config.toml"
        self.plugin = PluginProcess(self.lab.nri_socket, workdir / "plugin.log",
                                    status_socket=status / "status.sock",
                                    args=("--config", str(self.config)))
        self.plugin_up = False
        self.tally = Tally()
        self.rejections = Rejections(workdir / "plugin.log")

    @property
    def cri(self) -> KubeletClient:
        client = self.lab.client()
        client.timeout = max(client.timeout, 60 * self.scale)
        return client

    def start(self) -> None:
        self.lab.start()
        self.lab.import_image()
        self.write_config(self.model.namespaces)
        self.start_plugin()

    def write_config(self, namespaces: tuple[str, ...]) -> None:
        listed = ", ".join(json.dumps(n) for n in namespaces)
        self.config.write_text(
            f"[pinning]\nnamespaces = [{listed}]\n\n[cpus]\n"
            f"reserved = {json.dumps(self.model.reserved.format())}\n"
            f"strict_reservation = {str(self.model.strict_reservation).lower()}\n\n"
            f"[runtime]\nverify_period = {self.verify_period}\n\n"
            "[observability]\nlisten = \"\"\nlog_level = \"info\"\n")

    def reload(self) -> None:
        os.kill(self.plugin.pid, signal.SIGHUP)

    def start_plugin(self) -> None:
        synchronized = self.plugin.count("synchronized")
        self.plugin.start()
        self.plugin.wait_for("synchronized", synchronized + 1, timeout=60 * self.scale)
        self.plugin_up = True

    def state(self) -> dict[str, Any]:
        """The plugin's state document, as ``nri-cpuset inspect -o json`` prints it."""
        assert self.plugin.status_socket is not None
        # Scaled: an emulated guest's plugin, just restarted, answers between its catch-up's
        # slices, seconds apart (a VM soak once stopped on the unscaled 5 s).
        document: dict[str, Any] = json.loads(read_status(self.plugin.status_socket,
                                                          timeout=5 * self.scale))
        return document

    def inspect(self) -> dict[str, Any]:
        """The same document through the operator's command, ``nri-cpuset inspect -o json``."""
        assert self.plugin.status_socket is not None
        done = subprocess.run(  # noqa: S603 - our interpreter, our module
            [sys.executable, "-m", "cpuset_cli", "inspect", "--status-socket",
             str(self.plugin.status_socket), "-o", "json"],
            capture_output=True, text=True, timeout=60 * self.scale, check=True)
        document: dict[str, Any] = json.loads(done.stdout)
        return document

    def measure(self) -> tuple[int, int, int]:
        pid = self.plugin.pid
        rss = self.plugin.memory_kib()["VmRSS"]
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        self.tally.memory.append((pid, rss, fds))
        return pid, rss, fds

    def close(self) -> None:
        try:
            if self.plugin.process is not None:
                self.plugin.stop()
        finally:
            self.lab.close()
