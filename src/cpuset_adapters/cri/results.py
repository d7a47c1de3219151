"""What the CRI client returns: the runtime's version, pods, containers and their status as
plain values, decoded from the CRI messages (verbose ``info`` maps with JSON values decoded)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from cpuset_adapters.cri.proto import cri_pb2 as pb


@dataclass(frozen=True, slots=True)
class Resources:
    """The CFS and memory settings of ``LinuxContainerResources`` (0 / "" = not specified)."""

    cpu_period: int = 0
    cpu_quota: int = 0
    cpu_shares: int = 0
    memory_limit: int = 0
    cpuset_cpus: str = ""
    cpuset_mems: str = ""

    def to_proto(self) -> pb.LinuxContainerResources:
        return pb.LinuxContainerResources(
            cpu_period=self.cpu_period, cpu_quota=self.cpu_quota, cpu_shares=self.cpu_shares,
            memory_limit_in_bytes=self.memory_limit, cpuset_cpus=self.cpuset_cpus,
            cpuset_mems=self.cpuset_mems)

    @classmethod
    def from_proto(cls, res: pb.LinuxContainerResources) -> Resources:
        return cls(cpu_period=res.cpu_period, cpu_quota=res.cpu_quota, cpu_shares=res.cpu_shares,
                   memory_limit=res.memory_limit_in_bytes, cpuset_cpus=res.cpuset_cpus,
                   cpuset_mems=res.cpuset_mems)


@dataclass(frozen=True, slots=True)
class RuntimeVersion:
    """CRI ``Version``: e.g. ``containerd``, ``1.7.24~ds1``, API ``v1``."""

    version: str
    runtime_name: str
    runtime_version: str
    runtime_api_version: str


@dataclass(frozen=True, slots=True)
class PodInfo:
    """One sandbox from ``ListPodSandbox``."""

    id: str
    name: str
    namespace: str
    uid: str
    ready: bool
    annotations: Mapping[str, str]
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class PodStatus:
    """``PodSandboxStatus`` (verbose)."""

    id: str
    name: str
    namespace: str
    uid: str
    ready: bool
    annotations: Mapping[str, str]
    #: The verbose ``info`` map, JSON values decoded (containerd: ``info`` with ``pid``,
    #: ``config`` = the PodSandboxConfig it ran, ``runtimeSpec``, ...).
    info: Mapping[str, object] = field(repr=False)

    @property
    def pid(self) -> int | None:
        return pid_from_info(self.info)

    @property
    def cgroup_parent(self) -> str | None:
        """The sandbox config's ``linux.cgroup_parent`` as the runtime recorded it."""
        parent = _dig(self.info, "info", "config", "linux", "cgroup_parent")
        return parent if isinstance(parent, str) else None


@dataclass(frozen=True, slots=True)
class ContainerInfo:
    """One container from ``ListContainers``."""

    id: str
    pod_id: str
    name: str
    state: str  # CONTAINER_CREATED / _RUNNING / _EXITED / _UNKNOWN
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    #: When the runtime created it, in nanoseconds since the epoch (0: not reported).
    created_at: int = 0


@dataclass(frozen=True, slots=True)
class ContainerStatus:
    """``ContainerStatus`` (verbose): state, resources as the runtime records them, and pid."""

    id: str
    name: str
    state: str
    exit_code: int
    reason: str
    message: str
    resources: Resources | None
    annotations: Mapping[str, str]
    #: The init process on the host (containerd's verbose ``info.pid``); None when not running.
    pid: int | None
    #: The verbose ``info`` map, JSON values decoded (containerd: ``info`` with ``pid``,
    #: ``sandboxID``, ``runtimeSpec``, ...).
    info: Mapping[str, object] = field(repr=False)
    #: Created, started and finished, in nanoseconds since the epoch (0: not yet, or not
    #: reported).
    created_at: int = 0
    started_at: int = 0
    finished_at: int = 0

    @property
    def running(self) -> bool:
        return self.state == "CONTAINER_RUNNING"

    @property
    def cgroups_path(self) -> str | None:
        """``runtimeSpec.linux.cgroupsPath`` from the verbose info, if the runtime gave it."""
        spec = _dig(self.info, "info", "runtimeSpec", "linux", "cgroupsPath")
        return spec if isinstance(spec, str) else None


def _dig(obj: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def decode_info(info: Mapping[str, str]) -> dict[str, object]:
    decoded: dict[str, object] = {}
    for key, value in info.items():
        try:
            decoded[key] = json.loads(value)
        except ValueError:
            decoded[key] = value
    return decoded


def pid_from_info(info: Mapping[str, object]) -> int | None:
    pid = _dig(info, "info", "pid")
    if pid is None:
        pid = info.get("pid")
    return pid if isinstance(pid, int) and pid > 0 else None
