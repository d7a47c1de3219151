"""The lab containerd's configuration: every path under its workdir and the config file that
confines it there with NRI enabled (version 2 for containerd 1.7, version 3 for 2.x, whose CRI
keys live in other sections)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cpuset_lab import faulty_runc
from cpuset_lab.containerd_install import RUNC, LabError, Runtime

#: sun_path is 108 bytes including the terminating NUL (the ttrpc socket adds ".ttrpc").
_MAX_SOCKET_PATH: Final = 107 - len(".ttrpc")


def _toml_str(value: str | Path) -> str:
    text = str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerdConfig:
    """Where one lab containerd keeps everything, and how its NRI and CRI are set up."""

    workdir: Path
    nri_plugin_path: Path
    nri_plugin_config_path: Path
    registration_timeout: str
    request_timeout: str
    nri_enabled: bool
    image: str
    runtime: Runtime
    """Which containerd reads the file (its format follows)."""

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
    def faulty_runc(self) -> Path:
        """The ``runc-faulty`` handler's runc: a wrapper whose updates can fail
        (``faulty_runc``)."""
        return self.workdir / "runc-faulty"

    @property
    def update_faults(self) -> Path:
        """Where a file named by a container id makes its runc updates fail."""
        return self.workdir / "fail-updates"

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

    # -- the file --

    def text(self) -> str:
        """The containerd config, in the format of ``runtime``."""
        cri = (self._cri_v2() if self.runtime.config_version == 2 else self._cri_v3())
        return "\n".join([*self._common(), *cri, ""])

    def _common(self) -> list[str]:
        q = _toml_str
        return [
            f"version = {self.runtime.config_version}",
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
            # The same section and keys in 1.7 and 2.x.
            '[plugins."io.containerd.nri.v1.nri"]',
            f"  disable = {'false' if self.nri_enabled else 'true'}",
            f"  socket_path = {q(self.nri_socket)}",
            f"  plugin_path = {q(self.nri_plugin_path)}",
            f"  plugin_config_path = {q(self.nri_plugin_config_path)}",
            f"  plugin_registration_timeout = {q(self.registration_timeout)}",
            f"  plugin_request_timeout = {q(self.request_timeout)}",
            "",
        ]

    def _cri_v2(self) -> list[str]:
        """containerd 1.7: everything CRI in ``io.containerd.grpc.v1.cri``."""
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        q = _toml_str
        return [
            f"[{cri}]",
            f"  sandbox_image = {q(self.image)}",
            *self._cri_runtime_keys(),
            '  stream_server_address = "127.0.0.1"',
            '  stream_server_port = "0"',
            f"[{cri}.cni]",
            f"  bin_dir = {q(self.workdir / 'cni' / 'bin')}",
            f"  conf_dir = {q(self.workdir / 'cni' / 'conf')}",
            f"[{cri}.containerd]",
            '  snapshotter = "overlayfs"',
            '  default_runtime_name = "runc"',
            *self._runtimes(f"{cri}.containerd.runtimes"),
        ]

    def _cri_v3(self) -> list[str]:
        """containerd 2.x: images (the pinned sandbox image, the snapshotter) and runtime
        (handlers, CNI, OCI spec knobs) are plugins of their own; the gRPC service keeps only
        streaming (placement as ``containerd config default`` of 2.1 prints it)."""
        images = 'plugins."io.containerd.cri.v1.images"'
        runtime = 'plugins."io.containerd.cri.v1.runtime"'
        q = _toml_str
        return [
            f"[{images}]",
            '  snapshotter = "overlayfs"',
            f"[{images}.pinned_images]",
            f"  sandbox = {q(self.image)}",
            f"[{runtime}]",
            *self._cri_runtime_keys(),
            f"[{runtime}.cni]",
            f"  bin_dirs = [{q(self.workdir / 'cni' / 'bin')}]",
            f"  conf_dir = {q(self.workdir / 'cni' / 'conf')}",
            f"[{runtime}.containerd]",
            '  default_runtime_name = "runc"',
            *self._runtimes(f"{runtime}.containerd.runtimes"),
            '[plugins."io.containerd.grpc.v1.cri"]',
            '  stream_server_address = "127.0.0.1"',
            '  stream_server_port = "0"',
        ]

    @staticmethod
    def _cri_runtime_keys() -> list[str]:
        return [
            # The VMs lack CAP_SYS_RESOURCE in the effective set: without this runc cannot
            # lower oom_score_adj and every sandbox fails ("can't get final child's PID").
            "  restrict_oom_score_adj = true",
            "  enable_cdi = false",
        ]

    def _runtimes(self, table: str) -> list[str]:
        runc = f"{table}.runc"
        faulty = f"{table}.{faulty_runc.HANDLER}"
        q = _toml_str
        return [
            f"[{runc}]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{runc}.options]",
            # Never whatever runc comes first on PATH (trixie's and forky's need a newer glibc).
            f"  BinaryName = {q(RUNC)}",
            f"  Root = {q(self.runc_root)}",
            "  SystemdCgroup = false",
            # A second handler, for pods whose live updates a test makes fail; same runc root,
            # so cleanup finds its containers too.
            f"[{faulty}]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{faulty}.options]",
            f"  BinaryName = {q(self.faulty_runc)}",
            f"  Root = {q(self.runc_root)}",
            "  SystemdCgroup = false",
        ]

    def write(self) -> Path:
        for sock in (self.cri_address, self.nri_socket):
            if len(str(sock).encode()) > _MAX_SOCKET_PATH:
                raise LabError(f"socket path too long for AF_UNIX ({len(str(sock))} bytes): "
                               f"{sock}; use a shorter workdir")
        for directory in (self.workdir, self.root, self.state, self.runc_root,
                          self.nri_socket.parent, self.nri_plugin_path,
                          self.nri_plugin_config_path, self.update_faults,
                          self.workdir / "cni" / "bin",
                          self.workdir / "cni" / "conf", self.workdir / "opt", self.pod_log_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.faulty_runc.write_text(faulty_runc.wrapper_script(RUNC, self.update_faults))
        self.faulty_runc.chmod(0o755)
        self.config_path.write_text(self.text())
        return self.config_path
