"""What a stopped lab containerd may leave behind, removed: runc containers, shims, mounts under
its workdir and pod cgroups."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path

from cpuset_lab import cgroups
from cpuset_lab.containerd_config import ContainerdConfig
from cpuset_lab.containerd_install import K8S_NAMESPACE, RUNC


def reap_leftovers(config: ContainerdConfig, cgroup_parents: Iterable[str] | None) -> None:
    """After containerd is gone: kill and delete runc containers under our runc root, end shims
    serving our socket, unmount whatever is still mounted under ``workdir``, and remove the pod
    cgroups in ``cgroup_parents`` (if given)."""
    runc_ns = config.runc_root / K8S_NAMESPACE
    if runc_ns.is_dir():
        for entry in runc_ns.iterdir():
            if entry.is_dir():
                subprocess.run([str(RUNC), "--root", str(runc_ns), "delete", "--force",  # noqa: S603
                                entry.name], capture_output=True, check=False, timeout=30)
    address = str(config.cri_address).encode()
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
    for mount_point in reversed(_mounts_under(config.workdir)):
        subprocess.run(["umount", "-l", mount_point], capture_output=True,  # noqa: S607,S603
                       check=False, timeout=30)
    if cgroup_parents is not None:
        remove_pod_cgroups(cgroup_parents)


def _mounts_under(workdir: Path) -> list[str]:
    prefix = str(workdir) + "/"
    mounts: list[str] = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split(" ")
            if len(fields) > 4:
                point = fields[4].replace("\\040", " ")
                if point.startswith(prefix):
                    mounts.append(point)
    return mounts


def remove_pod_cgroups(parents: Iterable[str]) -> list[str]:
    """Remove pod cgroup parents, deepest first, with the empty tiers above them (but not the
    root); return the parents in the order tried."""
    ordered = sorted(parents, key=len, reverse=True)
    for parent in ordered:
        depth = len([part for part in parent.split("/") if part])
        cgroups.remove_cgroup(parent, parents=depth - 1)
    return ordered
