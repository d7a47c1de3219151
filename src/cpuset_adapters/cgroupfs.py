"""What the kernel enforces on a container: its cgroup's cpuset files, found from the cgroup
path the runtime reports.

Both cgroup layouts are handled; ``cgroup_version()`` tells which one a root uses:

- v1: one hierarchy per controller, the container's cpuset at
  ``/sys/fs/cgroup/cpuset/<cgroup_parent>/<container id>/cpuset.cpus`` (and ``cpuset.mems``;
  ``cpuset.effective_cpus`` / ``cpuset.effective_mems`` are what the kernel applies);
- v2 (most production nodes): one tree, ``/sys/fs/cgroup/<path>/cpuset.cpus`` (configured, may be
  empty = inherit) and ``cpuset.cpus.effective`` (applied).

A container's cgroup path is its OCI ``linux.cgroupsPath`` (what NRI and CRI's verbose status
report) or its process's (``/proc/<pid>/cgroup``). Paths in the systemd driver's
``slice:prefix:name`` form are expanded the way runc does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cpuset_adapters import default_paths
from cpuset_core.cpuset import CPUSet
from cpuset_core.quota import UNLIMITED
from cpuset_core.verify import Observed

CGROUP_ROOT: Final = Path(default_paths.CGROUP_ROOT)
PROC_ROOT: Final = Path("/proc")
SET_TEXT_MAX: Final = 1 << 16
"""Bytes read of a cpulist file: every CPU of a 4096-CPU machine listed apart is 20 KiB."""
YIELD_EVERY: Final = 8
"""Containers read between two offers of the GIL to other threads (see ``observe_all``)."""


@dataclass(frozen=True, slots=True)
class CgroupCpuset:
    """A cgroup's cpuset files: configured (``cpus``/``mems``) and kernel-applied (effective)."""

    path: Path
    version: int
    cpus: CPUSet
    mems: CPUSet
    effective_cpus: CPUSet
    effective_mems: CPUSet


def cgroup_version(root: Path = CGROUP_ROOT) -> int:
    """2 when ``root`` is a unified (v2) hierarchy, else 1."""
    return 2 if (root / "cgroup.controllers").is_file() else 1


def expand_systemd_path(cgroups_path: str) -> str:
    """``kubepods-burstable-podX.slice:cri-containerd:ID`` -> the directory path runc uses
    (``/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podX.slice/cri-containerd-ID.scope``).
    An empty slice is runc's default, ``system.slice``. Paths not in that form are returned
    unchanged."""
    parts = cgroups_path.split(":")
    if len(parts) != 3 or cgroups_path.startswith("/"):
        return cgroups_path
    slice_name, prefix, name = parts
    slice_name = slice_name or "system.slice"
    dirs: list[str] = []
    if slice_name and slice_name != "-.slice":
        stem = slice_name.removesuffix(".slice")
        pieces = stem.split("-")
        dirs = ["-".join(pieces[: i + 1]) + ".slice" for i in range(len(pieces))]
    unit = name if name.endswith((".slice", ".scope")) else f"{prefix}-{name}.scope"
    return "/" + "/".join([*dirs, unit])


def systemd_unit(cgroups_path: str) -> str | None:
    """The systemd unit a container's cgroup is (runc's systemd driver: a scope), or ``None``
    for a cgroupfs driver's path. ``slice:prefix:name`` names ``prefix-name.scope`` (or
    ``name`` when it ends in ``.scope``); an expanded path is a unit when its last directory
    is a ``.scope``."""
    last = expand_systemd_path(cgroups_path).rstrip("/").rpartition("/")[2]
    return last if last.endswith(".scope") and len(last) > len(".scope") else None


def cgroup_dir(cgroups_path: str, *, controller: str = "cpuset", root: Path = CGROUP_ROOT) -> Path:
    """The directory of ``cgroups_path`` (as in the OCI spec or ``/proc/<pid>/cgroup``) for
    ``controller`` under ``root`` (v1: ``root/<controller>/<path>``, v2: ``root/<path>``)."""
    relative = expand_systemd_path(cgroups_path).lstrip("/")
    if cgroup_version(root) == 2:
        return root / relative
    return root / controller / relative


def quota_file(cgroups_path: str, version: int, root: Path = CGROUP_ROOT) -> Path:
    """The file holding the CFS quota of the cgroup at ``cgroups_path`` (OCI form): v1
    ``cpu.cfs_quota_us`` (-1 for none), v2 ``cpu.max`` (``"<quota> <period>"``, ``max`` for
    none)."""
    relative = expand_systemd_path(cgroups_path).lstrip("/")
    if version == 2:
        return root / relative / "cpu.max"
    return root / "cpu" / relative / "cpu.cfs_quota_us"


def parse_quota(text: str, version: int) -> int:
    """A quota file's content as microseconds per period, :data:`UNLIMITED` for none. Raises
    ``ValueError`` on anything else."""
    field = (text.split(maxsplit=1) or [""])[0]
    if version == 2 and field == "max":
        return UNLIMITED
    return int(field)


def process_cgroup(pid: int, *, controller: str = "cpuset", proc: Path = PROC_ROOT,
                   root: Path = CGROUP_ROOT) -> str:
    """The cgroup path of ``pid`` for ``controller`` (v1) or in the unified tree (v2), from
    ``/proc/<pid>/cgroup`` (relative to the reader's cgroup namespace)."""
    v2 = cgroup_version(root) == 2
    for line in (proc / str(pid) / "cgroup").read_text().splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if v2 and hierarchy == "0" and controllers == "":
            return path
        if not v2 and controller in controllers.split(","):
            return path
    raise LookupError(f"pid {pid} is in no {'unified' if v2 else controller} cgroup")


def _read_set(path: str | Path) -> CPUSet:
    """A cpulist file in three system calls, without a text stream: the verifier reads two
    of these per container on every pass."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        text = os.read(fd, SET_TEXT_MAX)
    finally:
        os.close(fd)
    return CPUSet.parse(text.decode().strip(), allow_empty=True)


def _effective(what: str, version: int) -> str:
    """The file of what the kernel applies of ``what`` (``cpus``/``mems``) on cgroup ``version``."""
    return f"cpuset.{what}.effective" if version == 2 else f"cpuset.effective_{what}"


def read_cpuset(directory: Path, *, root: Path = CGROUP_ROOT) -> CgroupCpuset:
    """The cpuset files of the cgroup ``directory`` (as returned by ``cgroup_dir``).

    v2: a configured ``cpuset.cpus`` may be empty (inherit from the parent); the effective files
    then hold what applies. Raises ``FileNotFoundError`` when the cgroup does not exist.
    """
    version = cgroup_version(root)
    names = ("cpuset.cpus", "cpuset.mems", _effective("cpus", version),
             _effective("mems", version))
    cpus, mems, eff_cpus, eff_mems = (_read_set(directory / name) for name in names)
    return CgroupCpuset(path=directory, version=version, cpus=cpus, mems=mems,
                        effective_cpus=eff_cpus, effective_mems=eff_mems)


def container_cpuset(cgroups_path: str, *, root: Path = CGROUP_ROOT) -> CgroupCpuset:
    """The cpuset of the cgroup at ``cgroups_path`` (OCI ``linux.cgroupsPath`` form)."""
    return read_cpuset(cgroup_dir(cgroups_path, root=root), root=root)


def process_cpuset(pid: int, *, proc: Path = PROC_ROOT, root: Path = CGROUP_ROOT) -> CgroupCpuset:
    """The cpuset of the cgroup ``pid`` is in."""
    return container_cpuset(process_cgroup(pid, proc=proc, root=root), root=root)


class CgroupReader:
    """Reads what the kernel enforces on containers, by cgroup path, under ``root`` (the
    host's ``/sys/fs/cgroup``, or where a DaemonSet mounts it). The layout (v1 or v2) is
    told once, at the first read."""

    def __init__(self, root: str | Path = CGROUP_ROOT) -> None:
        self.root = Path(root)
        self._version: int | None = None

    def observe(self, cgroups_path: str, *, quota: bool = True) -> Observed:
        """The container's cpuset: the configured CPUs and memory nodes, or what the kernel
        applies where they are left to inherit (empty), and its CFS quota when ``quota``
        (else ``None``: not judged). An unknown path or an unreadable cgroup is an
        observation of its own (``cpus is None``), never an exception."""
        if not cgroups_path:
            return Observed(cpus=None, problem="the runtime gave no cgroup path")
        directory = self._directory(cgroups_path)
        try:
            cpus, mems = self._applied(directory, "cpus"), self._applied(directory, "mems")
        except FileNotFoundError:
            return Observed(cpus=None, problem=f"no cgroup at {directory}")
        except (OSError, ValueError) as exc:
            return Observed(cpus=None, problem=f"{directory}: {exc}")
        return Observed(cpus=cpus, mems=mems,
                        cfs_quota=self._quota(cgroups_path) if quota else None)

    def _applied(self, directory: Path, what: str) -> CPUSet:
        """The configured ``cpus`` or ``mems``, or the effective set where the configured one
        is empty (inherited, on v2). The effective file is read only then: a pass reads half
        the files, and its CPU time competes with the runtime's (issue 45)."""
        assert self._version is not None  # _directory, called first, told it
        configured = _read_set(f"{directory}/cpuset.{what}")
        return configured or _read_set(f"{directory}/{_effective(what, self._version)}")

    def _quota(self, cgroups_path: str) -> int | None:
        """The cgroup's CFS quota, ``None`` when it cannot be read (not judged then)."""
        assert self._version is not None  # _directory, called first, told it
        try:
            path = quota_file(cgroups_path, self._version, self.root)
            return parse_quota(path.read_text(), self._version)
        except (OSError, ValueError):
            return None

    def has_tasks(self, cgroups_path: str) -> bool:
        """Whether any process is in the container's cgroup (``False`` when the cgroup does
        not exist, or no path is known). Raises ``OSError`` when it exists but cannot be
        read."""
        if not cgroups_path:
            return False
        try:
            with (self._directory(cgroups_path) / "cgroup.procs").open() as procs:
                return bool(procs.readline().strip())
        except FileNotFoundError:
            return False

    def _directory(self, cgroups_path: str) -> Path:
        if self._version is None:
            self._version = cgroup_version(self.root)
        relative = expand_systemd_path(cgroups_path).lstrip("/")
        return self.root / relative if self._version == 2 else self.root / "cpuset" / relative

    def observe_all(self, paths: Mapping[str, str],
                    quotas: Collection[str] | None = None) -> dict[str, Observed]:
        """:meth:`observe` for every container id → cgroup path (file reads: call it off the
        event loop), the CFS quota only of the ``quotas`` containers (``None``: of all; the
        verifier judges only those the plugin runs unthrottled, so it reads only theirs).
        Between containers it lets other threads run: a thread holds the GIL for up to 5 ms
        before the interpreter switches, and a hook waiting that long is what the verifier
        must not cost."""
        observed = {}
        for n, (cid, path) in enumerate(paths.items()):
            observed[cid] = self.observe(path, quota=quotas is None or cid in quotas)
            if n % YIELD_EVERY == YIELD_EVERY - 1:
                time.sleep(0)  # yields the GIL to the event loop's thread if it wants it
        return observed
