"""The launcher script containerd runs from its NRI plugin directory (pre-installed mode)."""

from __future__ import annotations

import shlex
from pathlib import Path


def script(*, python: str, log_file: str, sysfs_root: str, cri_socket: str | None = None,
           config: str | None = None) -> str:
    """Return the launcher: a POSIX shell script that needs nothing from the environment
    (containerd passes only the three NRI_PLUGIN_* variables, no PATH). ``cri_socket`` and
    ``config`` become ``run``'s flags when given (a flag given wins over the file's key)."""
    flags = f"--sysfs-root {shlex.quote(sysfs_root)}"
    if config is not None:
        flags += f" --config {shlex.quote(config)}"
    if cri_socket is not None:
        flags += f" --cri-socket {shlex.quote(cri_socket)}"
    return (
        "#!/bin/sh\n"
        "# Installed by `nri-cpuset install-launcher`. containerd starts this with only\n"
        "# NRI_PLUGIN_NAME, NRI_PLUGIN_IDX and NRI_PLUGIN_SOCKET set; stdout/stderr go nowhere.\n"
        f"exec {shlex.quote(python)} -m cpuset_cli run {flags} \"$@\" "
        f">>{shlex.quote(log_file)} 2>&1\n")


def install(plugin_dir: Path, *, name: str, index: str, python: str, log_file: str,
            sysfs_root: str, cri_socket: str | None = None, config: str | None = None) -> Path:
    """Write ``<plugin_dir>/<index>-<name>`` atomically (0755) and return its path."""
    plugin_dir.mkdir(parents=True, exist_ok=True)
    target = plugin_dir / f"{index}-{name}"
    temporary = plugin_dir / f".{index}-{name}.tmp"
    temporary.write_text(script(python=python, log_file=log_file, sysfs_root=sysfs_root,
                                cri_socket=cri_socket, config=config))
    temporary.chmod(0o755)
    # Rename, so the runtime never sees a half-written executable: a plugin file it cannot
    # run makes containerd 1.7's NRI fail to start entirely.
    temporary.replace(target)
    return target
