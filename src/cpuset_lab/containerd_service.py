"""The lab containerd as a systemd service, with runc's systemd cgroup driver: how production
nodes run it (``Delegate=yes``, ``KillMode=process``, ``SystemdCgroup = true``).

For guests whose PID 1 is systemd (the VM lab's ``systemd`` shape). The unit file goes to
``/run/systemd/system`` (a tmpfs there: the guest's root is a read-only view of the host), so
``systemctl restart``/``kill``/``daemon-reload`` act on it as on a node's ``containerd.service``.
Containers keep running across a restart: only the main process is stopped, the shims stay.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path
from typing import Any, Final

from cpuset_adapters.cri.results import RuntimeVersion
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import LabError

UNIT: Final = "containerd.service"
UNIT_DIR: Final = Path("/run/systemd/system")


def systemctl(*args: str, timeout: float = 120.0) -> str:
    """``systemctl ARGS``; its stdout, or ``LabError`` with what it said."""
    done = subprocess.run(["systemctl", *args], capture_output=True, text=True,  # noqa: S603,S607
                          timeout=timeout, check=False)
    if done.returncode != 0:
        raise LabError(f"systemctl {' '.join(args)} failed ({done.returncode}): "
                       f"{done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def unit_text(*, containerd: Path, config: Path, log: Path, path: str, home: Path) -> str:
    """``containerd.service`` as containerd ships it, pointed at the lab's binary and config,
    logging to ``log``. ``Restart=no``: a test that kills it decides when it comes back."""
    return "\n".join([
        "[Unit]",
        "Description=containerd for the nri-cpuset lab",
        "After=local-fs.target",
        "",
        "[Service]",
        "Type=notify",
        f"ExecStart={containerd} --config {config}",
        f"Environment=PATH={path} HOME={home} LANG=C.UTF-8",
        f"WorkingDirectory={home}",
        # The shims and the containers' scopes must outlive a restart of the main process, and
        # runc manages the cgroups below: containerd's own unit file says the same.
        "Delegate=yes",
        "KillMode=process",
        "Restart=no",
        "TimeoutStartSec=0",
        f"StandardOutput=append:{log}",
        f"StandardError=append:{log}",
        "",
    ])


class ServiceContainerd(LabContainerd):
    """:class:`LabContainerd` run as ``containerd.service`` with ``SystemdCgroup = true``."""

    def __init__(self, workdir: Path | str, *, unit_dir: Path = UNIT_DIR,
                 **options: Any) -> None:
        super().__init__(workdir, systemd_cgroup=True, **options)
        self.unit_path = unit_dir / UNIT
        self._main_pid: int | None = None

    @property
    def pid(self) -> int | None:
        return self._main_pid if self.running else None

    @property
    def running(self) -> bool:
        if self._main_pid is None:
            return False
        try:
            return Path(f"/proc/{self._main_pid}/cmdline").read_bytes().split(b"\0")[0] == \
                str(self._installation().containerd).encode()
        except OSError:
            return False

    def install_unit(self) -> None:
        """Write the config and the unit and reload systemd, as installing the package does;
        nothing starts."""
        inst = self._installation()
        self.config.write()
        self.unit_path.parent.mkdir(parents=True, exist_ok=True)
        self.unit_path.write_text(unit_text(
            containerd=inst.containerd, config=self.config.config_path,
            log=self.config.log_path, home=self.workdir,
            path=f"{inst.bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"))
        systemctl("daemon-reload")

    def start(self) -> RuntimeVersion:
        """Write the unit, start it and wait until CRI answers (``LabError`` otherwise)."""
        if self.running:
            raise LabError(f"containerd already running (pid {self._main_pid})")
        self.install_unit()
        # --no-block: readiness is CRI answering (below), which also bounds the wait.
        systemctl("start", "--no-block", UNIT)
        return self._await_main_process()

    def adopt(self) -> RuntimeVersion:
        """The unit was started by something else (a target, a boot): take its main process
        and wait until CRI answers."""
        return self._await_main_process()

    def restart(self) -> RuntimeVersion:
        """``systemctl restart containerd``: containers keep running under their shims."""
        systemctl("restart", "--no-block", UNIT)
        return self._await_main_process(previous=self._main_pid)

    def kill(self) -> None:
        """SIGKILL the main process, as a crash would (``Restart=no``: it stays down)."""
        if self.running:
            systemctl("kill", "--kill-who=main", "--signal=SIGKILL", UNIT)
            deadline = time.monotonic() + self.start_timeout
            while self.running and time.monotonic() < deadline:
                time.sleep(0.1)

    def _await_main_process(self, previous: int | None = None) -> RuntimeVersion:
        deadline = time.monotonic() + self.start_timeout
        while True:
            main = int(systemctl("show", "--property=MainPID", "--value", UNIT).strip() or 0)
            if main and main != previous:
                self._main_pid = main
                break
            if time.monotonic() > deadline:
                raise LabError(f"{UNIT} has no new main process after {self.start_timeout} s "
                               f"({self._unit_state()})\n{self.log_tail()}")
            time.sleep(0.2)
        try:
            return self._wait_ready()
        except BaseException:
            self._terminate()
            raise

    def _unit_state(self) -> str:
        try:
            return systemctl("show", "--property=ActiveState,SubState,Result", UNIT).strip()
        except LabError as exc:
            return str(exc)

    def _terminate(self, timeout: float = 15.0) -> None:
        with contextlib.suppress(LabError, subprocess.TimeoutExpired):
            systemctl("stop", UNIT, timeout=timeout * 4)
        self._main_pid = None
