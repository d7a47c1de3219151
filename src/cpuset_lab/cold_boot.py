"""A node's cold boot in a systemd guest (the VM lab's ``systemd`` shape): containerd.service,
the plugin installed one of the documented ways, and ``kubelet.service`` (``kubelet_standin``),
all started by one ``systemctl start`` of a target wanting them: one transaction, ordered by
the units' own ``After=``/``Before=``, as a boot orders them.

The plugin is either ``deploy/systemd/nri-cpuset.service`` as shipped, with a drop-in pointing
``ExecStart`` at this checkout (how an operator customizes a unit), or the pre-installed
launcher (``install-launcher``) in containerd's plugin path. The node's image is imported by a
first containerd start before the plugin is installed: a node boots with its images.

:meth:`ColdBootNode.power_off` leaves what a reboot leaves: no process of containerd, its shims,
the plugin or any container; containerd's state directory (a tmpfs on a node) gone, its root
(metadata, images, snapshots) kept. The next :meth:`ColdBootNode.boot` is the reboot.
"""

from __future__ import annotations

import contextlib
import datetime
import enum
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cpuset_cli.daemon import launcher
from cpuset_lab.containerd_cleanup import reap_leftovers
from cpuset_lab.containerd_install import Installation, LabError
from cpuset_lab.containerd_service import UNIT as CONTAINERD
from cpuset_lab.containerd_service import UNIT_DIR, ServiceContainerd, systemctl

SRC: Final = Path(__file__).resolve().parents[1]
DEPLOY_UNIT: Final = SRC.parent / "deploy" / "systemd" / "nri-cpuset.service"
PLUGIN: Final = "nri-cpuset.service"
KUBELET: Final = "kubelet.service"
TARGET: Final = "nri-cpuset-lab-node.target"


class PluginMode(enum.StrEnum):
    UNIT = "unit"
    """deploy/systemd's ``nri-cpuset.service`` (``Type=notify``, ``Before=kubelet.service``)."""
    PREINSTALLED = "preinstalled"
    """The launcher in containerd's NRI plugin path: containerd starts the plugin itself."""


def kubelet_unit(*, python: str, cri: Path, manifest: Path, record: Path, log: Path) -> str:
    """``kubelet.service`` as a kubeadm node orders it (after containerd), running the
    stand-in once; ``RemainAfterExit`` keeps it active, as a running kubelet is."""
    return "\n".join([
        "[Unit]", "Description=kubelet stand-in of the nri-cpuset lab",
        "Wants=containerd.service", "After=containerd.service", "",
        "[Service]", "Type=oneshot", "RemainAfterExit=yes", "TimeoutStartSec=infinity",
        f"Environment=PYTHONPATH={SRC} PYTHONDONTWRITEBYTECODE=1",
        f"ExecStart={python} -m cpuset_lab.kubelet_standin --cri {cri} --manifest {manifest} "
        f"--record {record}",
        f"StandardOutput=append:{log}", f"StandardError=append:{log}", ""])


PRIVATE_TMP_DIRS: Final = ("/tmp", "/var/tmp")  # noqa: S108 - named, never written to
"""What the shipped unit's ``PrivateTmp=yes`` replaces with directories of its own."""


def plugin_drop_in(*, python: str, config: Path, nri_socket: Path, cri_socket: Path,
                   log: Path, source: Path = SRC) -> str:
    """Overrides for the shipped unit: this checkout's plugin on the lab's NRI and CRI
    sockets. An interpreter under a home directory (pyenv's ``/root/.pyenv``) needs homes
    visible, which the unit's ``ProtectHome=yes`` hides: then they are made read-only instead.
    A checkout, interpreter or results directory under ``/tmp`` (a CI clone there) would be
    hidden by the unit's ``PrivateTmp=yes`` (the plugin then exits on "the file does not
    exist"): then the lab's unit shares the host's ``/tmp``."""
    interpreter = Path(python).resolve()
    home = any(interpreter.is_relative_to(homes) for homes in ("/root", "/home"))
    # The path as written (a venv's interpreter is a symlink: its directory must be visible)
    # and where it leads.
    in_tmp = any(seen.is_relative_to(tmp)
                 for path in (Path(python), source, config)
                 for seen in (path.absolute(), path.resolve())
                 for tmp in PRIVATE_TMP_DIRS)
    return "\n".join([
        "[Service]", "ExecStart=",
        f"ExecStart={python} -m cpuset_cli run --config {config} --nri-socket {nri_socket} "
        f"--cri-socket {cri_socket} --log-format console --log-level debug",
        f"Environment=PYTHONPATH={source}",
        *(["ProtectHome=read-only"] if home else []),
        *(["PrivateTmp=no"] if in_tmp else []),
        f"StandardOutput=append:{log}", f"StandardError=append:{log}", ""])


def realtime_stamp(unit: str, prop: str) -> float | None:
    """A unit's ``<prop>Timestamp`` as seconds since the epoch, to the microsecond (what the
    plugin's log lines carry; ``None``: not reached yet)."""
    value = systemctl("show", "--timestamp=us+utc", f"--property={prop}Timestamp", "--value",
                      unit).strip()
    if not value:
        return None
    stamp = datetime.datetime.strptime(value, "%a %Y-%m-%d %H:%M:%S.%f %Z")
    return stamp.replace(tzinfo=datetime.UTC).timestamp()


def monotonic_stamp(unit: str, prop: str) -> float | None:
    """A unit's ``<prop>TimestampMonotonic`` in seconds (``None``: not reached yet)."""
    value = systemctl("show", f"--property={prop}TimestampMonotonic", "--value", unit).strip()
    return int(value) / 1e6 if value and value != "0" else None


@dataclass
class ColdBootNode:
    """A node whose boots are ``systemctl start`` of :data:`TARGET`."""

    workdir: Path
    record: Path
    """Logs, the manifest and the stand-in's ``boot-<n>.json``."""
    mode: PluginMode
    manifest: list[dict[str, Any]]
    plugin_config: Path
    installation: Installation
    timeouts: dict[str, Any] = field(default_factory=dict)
    """``start_timeout``, ``request_timeout``, ``registration_timeout`` for containerd."""
    unit_dir: Path = UNIT_DIR
    boots: int = 0

    def __post_init__(self) -> None:
        self.lab = ServiceContainerd(self.workdir, installation=self.installation,
                                     nri_plugin_path=self.workdir / "plugins",
                                     unit_dir=self.unit_dir, **self.timeouts)
        self.plugin_log = self.record / "plugin.log"

    def install(self) -> None:
        """The node as installed before its first boot: image, plugin, units."""
        self.record.mkdir(parents=True, exist_ok=True)
        self.lab.start()
        self.lab.import_image()
        self.lab.stop(cleanup=False)
        python = sys.executable
        if self.mode is PluginMode.PREINSTALLED:
            launcher.install(self.workdir / "plugins", name="nri-cpuset", index="10",
                             python=python, log_file=str(self.plugin_log), sysfs_root="/sys",
                             cri_socket=str(self.lab.cri_address),
                             config=str(self.plugin_config))
        else:
            shutil.copy(DEPLOY_UNIT, self.unit_dir / PLUGIN)
            drop_in = self.unit_dir / f"{PLUGIN}.d"
            drop_in.mkdir(exist_ok=True)
            (drop_in / "lab.conf").write_text(plugin_drop_in(
                python=python, config=self.plugin_config, nri_socket=self.lab.nri_socket,
                cri_socket=self.lab.cri_address, log=self.plugin_log))
        manifest = self.record / "manifest.json"
        manifest.write_text(json.dumps(
            [{**pod, "image": self.lab.image} for pod in self.manifest], indent=2))
        (self.unit_dir / KUBELET).write_text(kubelet_unit(
            python=python, cri=self.lab.cri_address, manifest=manifest, record=self.record,
            log=self.record / "kubelet.log"))
        wanted = [CONTAINERD, KUBELET] + ([PLUGIN] if self.mode is PluginMode.UNIT else [])
        (self.unit_dir / TARGET).write_text(
            "[Unit]\nDescription=an nri-cpuset lab node's boot\n"
            f"Wants={' '.join(wanted)}\n")
        systemctl("daemon-reload")

    def boot(self, timeout: float) -> dict[str, Any]:
        """Start the target and wait until the stand-in ran its pods; its record, with the
        units' monotonic timestamps under ``units``."""
        self.boots += 1
        systemctl("start", "--no-block", TARGET)
        deadline = time.monotonic() + timeout
        while (state := self._state(KUBELET)) not in ("active", "failed"):
            if time.monotonic() > deadline:
                raise LabError(f"boot {self.boots}: {KUBELET} still {state} after "
                               f"{timeout:.0f} s\n{self.logs()}")
            time.sleep(0.5)
        if state == "failed":
            raise LabError(f"boot {self.boots}: {KUBELET} failed\n{self.logs()}")
        self.lab.adopt()
        (self.record / f"boot-{self.boots}-systemd.txt").write_text(self.logs())
        record: dict[str, Any] = json.loads(
            (self.record / f"boot-{self.boots}.json").read_text())
        units = [CONTAINERD, KUBELET] + ([PLUGIN] if self.mode is PluginMode.UNIT else [])
        record["units"] = {unit: {prop: monotonic_stamp(unit, prop) for prop in (
            "ExecMainStart", "ActiveEnter")} for unit in units}
        record["kubelet_started_at"] = realtime_stamp(KUBELET, "ExecMainStart")
        return record

    def power_off(self) -> None:
        """Everything stops as a power-off stops it; see the module's docstring."""
        for unit in (KUBELET, PLUGIN):
            with contextlib.suppress(LabError):
                systemctl("stop", unit)
        # All of containerd.service's cgroup: the main process, the shims and a pre-installed
        # plugin, which containerd started as its child.
        with contextlib.suppress(LabError):
            systemctl("kill", "--kill-who=all", "--signal=SIGKILL", CONTAINERD)
        with contextlib.suppress(LabError):
            systemctl("stop", CONTAINERD)
        reap_leftovers(self.lab.config, None)  # the containers, their mounts
        with contextlib.suppress(LabError):
            systemctl("stop", "kubepods.slice")
        with contextlib.suppress(LabError):
            systemctl("reset-failed")
        shutil.rmtree(self.lab.config.state, ignore_errors=True)

    def remove(self) -> None:
        """Power off and uninstall: the units, the drop-in, the launcher, the workdir."""
        self.power_off()
        with contextlib.suppress(OSError):
            shutil.copy(self.lab.config.log_path, self.record / "containerd.log")
        for path in (self.unit_dir / TARGET, self.unit_dir / KUBELET, self.unit_dir / PLUGIN,
                     self.lab.unit_path):
            path.unlink(missing_ok=True)
        shutil.rmtree(self.unit_dir / f"{PLUGIN}.d", ignore_errors=True)
        with contextlib.suppress(LabError):
            systemctl("daemon-reload")
        shutil.rmtree(self.workdir, ignore_errors=True)

    def logs(self) -> str:
        """The tails of the stand-in's, the plugin's and containerd's logs."""
        parts = []
        for name, path in (("kubelet stand-in", self.record / "kubelet.log"),
                           ("plugin", self.plugin_log), ("containerd", self.lab.config.log_path)):
            try:
                parts.append(f"--- {name}:\n{path.read_text(errors='replace')[-2500:]}")
            except OSError:
                parts.append(f"--- {name}: (no log)")
        # What systemd itself says (a unit that never ran logs nothing of its own).
        for title, command in (
                ("systemctl status", ["systemctl", "status", "--no-pager", "--lines=0",
                                      KUBELET, PLUGIN, CONTAINERD]),
                ("journal", ["journalctl", "--no-pager", "--lines=40", "-u", KUBELET,
                             "-u", PLUGIN, "-u", CONTAINERD]),
                ("processes", ["ps", "-eo", "pid,ppid,stat,wchan:24,etimes,args"])):
            done = subprocess.run(command, capture_output=True, text=True,  # noqa: S603
                                  timeout=60, check=False)
            parts.append(f"--- {title}:\n{done.stdout[-4000:]}{done.stderr[-1000:]}")
        return "\n".join(parts)

    @staticmethod
    def _state(unit: str) -> str:
        return systemctl("show", "--property=ActiveState", "--value", unit).strip()
