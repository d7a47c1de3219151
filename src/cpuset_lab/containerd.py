"""A private, NRI-enabled containerd for e2e tests and the real-runtime demo.

``LabContainerd(workdir)`` runs a containerd that ``scripts/install-containerd`` unpacked (1.7.24
from Debian trixie, or 2.1.x from forky: the installation's, else ``$NRI_CPUSET_RUNTIME``'s,
else 1.7) with everything under ``workdir``: config, root, state, the CRI socket, the
NRI socket, runc's state and the log. It never touches a system containerd. The CRI sandbox
("pause") image is the lab's own busybox image (``image.py``), imported with ``ctr``, so nothing
is ever pulled. Pods must use host networking (no CNI is configured).

Typical use::

    with LabContainerd(tmp, nri_plugin_path=plugins) as lab:
        lab.import_image()
        client = lab.client()
        pod = client.run_pod(PodSpec(name="web", uid=uid,
                                      cgroup_parent=cgroup_parent("Burstable", uid)))
        ...
        lab.cleanup()        # every pod stopped and removed, pod cgroups deleted

``stop()`` cleans up the same way before it terminates containerd, so no runc process, shim,
mount or cgroup outlives the lab; ``restart()`` and ``kill()`` leave containers running (the
shims keep them), as a real containerd restart or crash does.

Pods run with ``runtime_handler=faulty_runc.HANDLER`` go through a runc wrapper whose live
updates fail for the containers ``lab.update_faults.fail(container_id)`` names, until
``allow(container_id)``: real update failures, as containerd reports them.
"""
from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_adapters.cri.results import RuntimeVersion
from cpuset_lab.containerd_cleanup import reap_leftovers, remove_pod_cgroups
from cpuset_lab.containerd_config import ContainerdConfig
from cpuset_lab.containerd_install import (
    K8S_NAMESPACE,
    Installation,
    LabError,
    Runtime,
    find_installation,
    runtime_named,
)
from cpuset_lab.faulty_runc import UpdateFaults
from cpuset_lab.image import IMAGE_NAME, build_image_archive
from cpuset_lab.kubelet import KubeletClient


class LabContainerd:
    """One containerd process with NRI enabled, confined to ``workdir``."""

    def __init__(
        self,
        workdir: Path | str,
        *,
        nri_plugin_path: Path | str | None = None,
        nri_plugin_config_path: Path | str | None = None,
        registration_timeout: str = "5s",
        request_timeout: str = "2s",
        nri_enabled: bool = True,
        installation: Installation | None = None,
        image: str = IMAGE_NAME,
        start_timeout: float = 30.0,
    ) -> None:
        self.workdir = Path(workdir).resolve()
        self.installation = installation
        self.config = ContainerdConfig(
            workdir=self.workdir,
            nri_plugin_path=(Path(nri_plugin_path) if nri_plugin_path is not None
                             else self.workdir / "nri" / "plugins"),
            nri_plugin_config_path=(Path(nri_plugin_config_path)
                                    if nri_plugin_config_path is not None
                                    else self.workdir / "nri" / "conf.d"),
            registration_timeout=registration_timeout, request_timeout=request_timeout,
            nri_enabled=nri_enabled, image=image,
            runtime=installation.runtime if installation is not None else runtime_named())
        self.start_timeout = start_timeout
        self.update_faults = UpdateFaults(self.config.update_faults)
        """Which containers' live updates fail (pods run with ``faulty_runc.HANDLER``)."""
        self._process: subprocess.Popen[bytes] | None = None
        self._client: KubeletClient | None = None

    # -- what callers use most of the configuration --

    @property
    def runtime(self) -> Runtime:
        """Which containerd this is (``runtime.name`` is ``"1.7"`` or ``"2.x"``): what tests
        ask for behaviour that differs between them."""
        return self.config.runtime

    @property
    def image(self) -> str:
        return self.config.image

    @property
    def cri_address(self) -> Path:
        """containerd's gRPC socket (CRI and the containerd API)."""
        return self.config.cri_address

    @property
    def nri_socket(self) -> Path:
        return self.config.nri_socket

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running and self._process else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # -- lifecycle --

    def _installation(self) -> Installation:
        if self.installation is None:
            self.installation = find_installation(runtime=self.runtime.name)
        return self.installation

    def start(self) -> RuntimeVersion:
        """Launch containerd and wait until CRI answers ``Version``; returns that version.

        Raises ``ContainerdNotInstalled`` or ``LabError`` (with the log's tail) on failure.
        """
        if self.running:
            raise LabError(f"containerd already running (pid {self.pid})")
        inst = self._installation()
        self.config.write()
        env = {
            "PATH": f"{inst.bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.workdir),
            "LANG": "C.UTF-8",
        }
        with self.config.log_path.open("ab") as log:
            log.write(f"--- lab: starting containerd at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self._process = subprocess.Popen(  # noqa: S603 - our own binary and config
                [str(inst.containerd), "--config", str(self.config.config_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=self.workdir,
                start_new_session=True)
        try:
            return self._wait_ready()
        except BaseException:
            self._terminate()
            raise

    def _wait_ready(self) -> RuntimeVersion:
        deadline = time.monotonic() + self.start_timeout
        client = self.client()
        last = "no answer yet"
        while time.monotonic() < deadline:
            if not self.running:
                code = self._process.returncode if self._process else None
                raise LabError(f"containerd exited with status {code} while starting\n"
                               f"{self.log_tail()}")
            if self.cri_address.exists():
                try:
                    version = client.version(timeout=2.0)
                except CriError as err:
                    last = str(err)
                else:
                    # CRI answers once NRI is up; the socket check only makes that explicit.
                    if not self.config.nri_enabled or self.nri_socket.exists():
                        return version
                    last = f"CRI is up but {self.nri_socket} does not exist"
            time.sleep(0.1)
        raise LabError(f"containerd did not answer CRI Version within {self.start_timeout}s "
                       f"({last})\n{self.log_tail()}")

    def client(self) -> KubeletClient:
        """A CRI client on this containerd (one per lab; it reconnects across restarts)."""
        if self._client is None:
            self._client = KubeletClient(self.cri_address)
        return self._client

    def stop(self, *, cleanup: bool = True, timeout: float = 15.0) -> None:
        """Stop containerd: first (``cleanup``) every pod and container, then SIGTERM, and
        SIGKILL after ``timeout`` seconds. Leftovers of a crashed run are reaped too."""
        if cleanup:
            if self.running:
                with contextlib.suppress(CriError):
                    self.cleanup()
            self._terminate(timeout)
            reap_leftovers(self.config, self._client.cgroup_parents if self._client else None)
        else:
            self._terminate(timeout)

    def kill(self) -> None:
        """SIGKILL containerd, as a crash would: containers keep running under their shims."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def restart(self) -> RuntimeVersion:
        """Stop containerd (containers keep running) and start it again."""
        self.stop(cleanup=False)
        return self.start()

    def _terminate(self, timeout: float = 15.0) -> None:
        proc = self._process
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """``stop()`` and close the CRI client."""
        try:
            self.stop()
        finally:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- images --

    def import_image(self, archive: Path | None = None) -> str:
        """Import an OCI archive (default: build the lab busybox image) into the ``k8s.io``
        namespace with ``ctr images import --all-platforms``; returns the image name."""
        if archive is None:
            archive = build_image_archive(self.workdir / "image.tar", name=self.image).path
        self.ctr("images", "import", "--all-platforms", str(archive))
        return self.image

    def ctr(self, *args: str, timeout: float = 120.0) -> str:
        """Run the installed ``ctr`` against this containerd in ``k8s.io``; returns stdout."""
        cmd = [str(self._installation().ctr), "--address", str(self.cri_address),
               "--namespace", K8S_NAMESPACE, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)  # noqa: S603
        if done.returncode != 0:
            raise LabError(f"{' '.join(cmd)} failed ({done.returncode}): "
                           f"{done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    # -- cleanup --

    def cleanup(self) -> int:
        """Stop and remove every pod (so every container) through CRI, then delete the pods'
        cgroup parents (``/kubepods/.../pod<uid>``, and QoS tiers left empty) that runc leaves
        behind, also those of pods the lab's client ran and a test already removed. Returns how
        many pods were still there."""
        self.update_faults.clear()
        client = self.client()
        pods = client.list_pods()
        parents = set(client.cgroup_parents)
        for pod in pods:
            with contextlib.suppress(CriError):
                parent = client.pod_status(pod.id).cgroup_parent
                if parent:
                    parents.add(parent)
            client.stop_pod(pod.id)
            client.remove_pod(pod.id)
        for parent in remove_pod_cgroups(parents):
            if not cgroupfs.cgroup_dir(parent).exists():
                client.cgroup_parents.discard(parent)
        return len(pods)

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of containerd's log (for error messages)."""
        try:
            text = self.config.log_path.read_text(errors="replace")
        except OSError:
            return "(no containerd log)"
        tail = text.splitlines()[-lines:]
        return f"--- last {len(tail)} lines of {self.config.log_path}:\n" + "\n".join(tail)
