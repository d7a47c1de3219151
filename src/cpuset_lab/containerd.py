"""A private, NRI-enabled containerd for e2e tests and the real-runtime demo.

``LabContainerd(workdir)`` runs the containerd that ``scripts/install-containerd`` unpacked (1.7.24,
from Debian trixie) with everything under ``workdir``: config, root, state, the CRI socket, the
NRI socket, runc's state and the log. It never touches a system containerd. The CRI sandbox
("pause") image is the lab's own busybox image (``image.py``), imported with ``ctr``, so nothing
is ever pulled. Pods must use host networking (no CNI is configured).

Typical use::

    with LabContainerd(tmp, nri_plugin_path=plugins) as lab:
        lab.import_image()
        client = lab.client()
        pod = client.run_pod("web", cgroup_parent=cgroup_parent("Burstable", uid), uid=uid)
        ...
        lab.cleanup()        # every pod stopped and removed, pod cgroups deleted

``stop()`` cleans up the same way before it terminates containerd, so no runc process, shim,
mount or cgroup outlives the lab; ``restart()`` and ``kill()`` leave containers running (the
shims keep them), as a real containerd restart or crash does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError, RuntimeVersion
from cpuset_lab import cgroups
from cpuset_lab.image import IMAGE_NAME, build_image_archive
from cpuset_lab.kubelet import KubeletClient

#: Where ``scripts/install-containerd`` puts things (override with ``NRI_CPUSET_LAB``).
DEFAULT_LAB_DIR: Final = Path("/var/lib/nri-cpuset-lab")
#: The containerd version the lab is built for.
CONTAINERD_VERSION: Final = "1.7.24"
RUNC: Final = Path("/usr/sbin/runc")
K8S_NAMESPACE: Final = "k8s.io"
#: sun_path is 108 bytes including the terminating NUL (the ttrpc socket adds ".ttrpc").
_MAX_SOCKET_PATH: Final = 107 - len(".ttrpc")


class LabError(RuntimeError):
    """The lab containerd could not be set up, started or cleaned up."""


class ContainerdNotInstalled(LabError):  # noqa: N818 - reads as a condition, like FileNotFoundError
    """``scripts/install-containerd`` has not been run (or the install is incomplete)."""


@dataclass(frozen=True, slots=True)
class Installation:
    """An unpacked containerd (``<lab>/containerd/usr/bin/{containerd,ctr,containerd-shim-*}``)."""

    prefix: Path

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "usr" / "bin"

    @property
    def containerd(self) -> Path:
        return self.bin_dir / "containerd"

    @property
    def ctr(self) -> Path:
        return self.bin_dir / "ctr"

    def version(self) -> str:
        """``containerd --version``'s version word, e.g. ``1.7.24~ds1``."""
        out = subprocess.run([str(self.containerd), "--version"], capture_output=True, text=True,  # noqa: S603
                             check=True, timeout=30).stdout.split()
        return out[2] if len(out) >= 3 else ""


def lab_dir() -> Path:
    return Path(os.environ.get("NRI_CPUSET_LAB") or DEFAULT_LAB_DIR)


def find_installation(prefix: Path | None = None) -> Installation:
    """The unpacked containerd, or ``ContainerdNotInstalled`` saying what is missing."""
    inst = Installation(prefix if prefix is not None else lab_dir() / "containerd")
    missing = [p for p in (inst.containerd, inst.ctr, inst.bin_dir / "containerd-shim-runc-v2",
                           RUNC) if not os.access(p, os.X_OK)]
    if missing:
        raise ContainerdNotInstalled(
            f"missing {', '.join(map(str, missing))}: run `bash scripts/install-containerd` as "
            "root (or set NRI_CPUSET_LAB to where it installed)")
    return inst


def _toml_str(value: str | Path) -> str:
    text = str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


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
        self.nri_enabled = nri_enabled
        self.nri_plugin_path = (Path(nri_plugin_path) if nri_plugin_path is not None
                                else self.workdir / "nri" / "plugins")
        self.nri_plugin_config_path = (Path(nri_plugin_config_path)
                                       if nri_plugin_config_path is not None
                                       else self.workdir / "nri" / "conf.d")
        self.registration_timeout = registration_timeout
        self.request_timeout = request_timeout
        self.image = image
        self.start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._client: KubeletClient | None = None

    # -- paths --

    @property
    def config_path(self) -> Path:
        return self.workdir / "config.toml"

    @property
    def log_path(self) -> Path:
        return self.workdir / "containerd.log"

    @property
    def root(self) -> Path:
        return self.workdir / "root"

    @property
    def state(self) -> Path:
        return self.workdir / "state"

    @property
    def runc_root(self) -> Path:
        """runc's ``--root`` parent (the shim appends the namespace)."""
        return self.workdir / "runc"

    @property
    def cri_address(self) -> Path:
        """containerd's gRPC socket (CRI and the containerd API)."""
        return self.workdir / "containerd.sock"

    @property
    def nri_socket(self) -> Path:
        return self.workdir / "nri" / "nri.sock"

    @property
    def pod_log_dir(self) -> Path:
        """A directory for pods' ``log_directory`` (container output), if a test wants one."""
        return self.workdir / "pod-logs"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running and self._process else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # -- configuration --

    def config_text(self) -> str:
        """The containerd config (version 2, as 1.7.x reads it)."""
        cni = self.workdir / "cni"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        runc = f"{cri}.containerd.runtimes.runc"
        q = _toml_str
        return "\n".join([
            "version = 2",
            f"root = {q(self.root)}",
            f"state = {q(self.state)}",
            # Snapshotters that cannot work here only add start-up noise.
            'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", '
            '"io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", '
            '"io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]',
            "",
            "[grpc]",
            f"  address = {q(self.cri_address)}",
            "[ttrpc]",
            f"  address = {q(str(self.cri_address) + '.ttrpc')}",
            "[debug]",
            '  address = ""',
            '  level = "info"',
            "[metrics]",
            '  address = ""',
            "",
            '[plugins."io.containerd.internal.v1.opt"]',
            f"  path = {q(self.workdir / 'opt')}",
            "",
            '[plugins."io.containerd.nri.v1.nri"]',
            f"  disable = {'false' if self.nri_enabled else 'true'}",
            f"  socket_path = {q(self.nri_socket)}",
            f"  plugin_path = {q(self.nri_plugin_path)}",
            f"  plugin_config_path = {q(self.nri_plugin_config_path)}",
            f"  plugin_registration_timeout = {q(self.registration_timeout)}",
            f"  plugin_request_timeout = {q(self.request_timeout)}",
            "",
            f"[{cri}]",
            f"  sandbox_image = {q(self.image)}",
            # The VMs lack CAP_SYS_RESOURCE in the effective set: without this runc cannot
            # lower oom_score_adj and every sandbox fails ("can't get final child's PID").
            "  restrict_oom_score_adj = true",
            '  stream_server_address = "127.0.0.1"',
            '  stream_server_port = "0"',
            "  enable_cdi = false",
            f"[{cri}.cni]",
            f"  bin_dir = {q(cni / 'bin')}",
            f"  conf_dir = {q(cni / 'conf')}",
            f"[{cri}.containerd]",
            '  snapshotter = "overlayfs"',
            '  default_runtime_name = "runc"',
            f"[{runc}]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{runc}.options]",
            # Never whatever runc comes first on PATH (trixie's needs a newer glibc).
            f"  BinaryName = {q(RUNC)}",
            f"  Root = {q(self.runc_root)}",
            "  SystemdCgroup = false",
            "",
        ])

    def write_config(self) -> Path:
        for sock in (self.cri_address, self.nri_socket):
            if len(str(sock).encode()) > _MAX_SOCKET_PATH:
                raise LabError(f"socket path too long for AF_UNIX ({len(str(sock))} bytes): "
                               f"{sock}; use a shorter workdir")
        for directory in (self.workdir, self.root, self.state, self.runc_root,
                          self.nri_socket.parent, self.nri_plugin_path,
                          self.nri_plugin_config_path, self.workdir / "cni" / "bin",
                          self.workdir / "cni" / "conf", self.workdir / "opt", self.pod_log_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self.config_text())
        return self.config_path

    # -- lifecycle --

    def _installation(self) -> Installation:
        if self.installation is None:
            self.installation = find_installation()
        return self.installation

    def start(self) -> RuntimeVersion:
        """Launch containerd and wait until CRI answers ``Version``; returns that version.

        Raises ``ContainerdNotInstalled`` or ``LabError`` (with the log's tail) on failure.
        """
        if self.running:
            raise LabError(f"containerd already running (pid {self.pid})")
        inst = self._installation()
        self.write_config()
        env = {
            "PATH": f"{inst.bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.workdir),
            "LANG": "C.UTF-8",
        }
        with self.log_path.open("ab") as log:
            log.write(f"--- lab: starting containerd at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self._process = subprocess.Popen(  # noqa: S603 - our own binary and config
                [str(inst.containerd), "--config", str(self.config_path)],
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
                    if not self.nri_enabled or self.nri_socket.exists():
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
            self._reap_leftovers()
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
        for parent in _remove_pod_cgroups(parents):
            if not cgroupfs.cgroup_dir(parent).exists():
                client.cgroup_parents.discard(parent)
        return len(pods)

    def _reap_leftovers(self) -> None:
        """After containerd is gone: kill and delete runc containers under our runc root,
        end shims serving our socket, unmount whatever is still mounted under ``workdir``."""
        runc_ns = self.runc_root / K8S_NAMESPACE
        if runc_ns.is_dir():
            for entry in runc_ns.iterdir():
                if entry.is_dir():
                    subprocess.run([str(RUNC), "--root", str(runc_ns), "delete", "--force",  # noqa: S603
                                    entry.name], capture_output=True, check=False, timeout=30)
        address = str(self.cri_address).encode()
        for proc_dir in Path("/proc").iterdir():
            if not proc_dir.name.isdigit():
                continue
            try:
                argv = (proc_dir / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and address in argv:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(proc_dir.name), signal.SIGKILL)
        for mount_point in reversed(self._mounts_under_workdir()):
            subprocess.run(["umount", "-l", mount_point], capture_output=True,  # noqa: S607,S603
                           check=False, timeout=30)
        if self._client is not None:
            _remove_pod_cgroups(self._client.cgroup_parents)

    def _mounts_under_workdir(self) -> list[str]:
        prefix = str(self.workdir) + "/"
        mounts: list[str] = []
        with contextlib.suppress(OSError):
            for line in Path("/proc/self/mountinfo").read_text().splitlines():
                fields = line.split(" ")
                if len(fields) > 4:
                    point = fields[4].replace("\\040", " ")
                    if point.startswith(prefix):
                        mounts.append(point)
        return mounts

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of containerd's log (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no containerd log)"
        tail = text.splitlines()[-lines:]
        return f"--- last {len(tail)} lines of {self.log_path}:\n" + "\n".join(tail)


def _remove_pod_cgroups(parents: Iterable[str]) -> list[str]:
    """Remove pod cgroup parents, deepest first, with the empty tiers above them (but not the
    root); return the parents in the order tried."""
    ordered = sorted(parents, key=len, reverse=True)
    for parent in ordered:
        depth = len([part for part in parent.split("/") if part])
        cgroups.remove_cgroup(parent, parents=depth - 1)
    return ordered
