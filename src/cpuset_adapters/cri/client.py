"""A small synchronous CRI client that drives a container runtime the way a kubelet does.

The e2e tests and the real-containerd demo use it to run pods and containers on containerd (and so
through NRI and this project's plugin) without a kubelet or crictl. It speaks gRPC over the
runtime's unix socket with the messages of ``proto/cri.proto`` (field numbers are the real CRI's).

Every failed call raises ``CriError`` carrying the gRPC status code and the runtime's own message;
when an NRI plugin rejects a container, CreateContainer fails and the plugin's reason is in
``CriError.details``.

The kubelet-shaped helpers at the top of the module turn Kubernetes quantities into what a kubelet
(cgroupfs driver, CFS quota enabled) sends: ``cgroup_parent`` for a QoS class and pod UID, and
``container_resources`` for CPU request/limit ("2", 0.5, "250m") and memory ("128Mi").
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Final, Protocol, Self, TypeVar

import grpc

from cpuset_adapters.cri.proto import cri_pb2 as pb

#: The CRI API version this client speaks (``VersionRequest.version``).
CRI_API_VERSION: Final = "v1"
#: kubelet's CFS period (``cpuCFSQuotaPeriod`` default) in microseconds.
DEFAULT_CPU_PERIOD: Final = 100_000
#: kubelet's bounds for CPU shares and quota (``milliCPUToShares`` / ``milliCPUToQuota``).
MIN_SHARES: Final = 2
MAX_SHARES: Final = 262_144
MIN_QUOTA: Final = 1_000


class _Message(Protocol):
    """What the client needs of a protobuf message (google.protobuf ships no type stubs)."""

    def SerializeToString(self) -> bytes: ...  # noqa: N802 - protobuf's name

    def ParseFromString(self, data: bytes) -> int: ...  # noqa: N802 - protobuf's name


_Resp = TypeVar("_Resp", bound=_Message)


# ---- errors ------------------------------------------------------------------------------------


class CriError(Exception):
    """A CRI call failed: ``code`` is the gRPC status, ``details`` the runtime's message."""

    def __init__(self, method: str, code: grpc.StatusCode, details: str) -> None:
        self.method = method
        self.code = code
        self.details = details
        super().__init__(f"CRI {method} failed: {self.code_name}: {details}")

    @property
    def code_name(self) -> str:
        """The status code's name, e.g. ``"UNKNOWN"`` or ``"NOT_FOUND"``."""
        name = getattr(self.code, "name", None)
        return name if isinstance(name, str) else str(self.code)


# ---- kubelet-shaped inputs ---------------------------------------------------------------------


class QosClass(StrEnum):
    """Kubernetes pod QoS classes (they decide the pod's cgroup parent)."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


def cgroup_parent(qos: QosClass | str, pod_uid: str, *, driver: str = "cgroupfs") -> str:
    """The cgroup parent a kubelet gives a pod's sandbox.

    cgroupfs driver: ``/kubepods/pod<uid>``, ``/kubepods/burstable/pod<uid>``,
    ``/kubepods/besteffort/pod<uid>``. systemd driver: ``kubepods-pod<uid>.slice``,
    ``kubepods-burstable-pod<uid>.slice``, ``kubepods-besteffort-pod<uid>.slice`` with the UID's
    dashes turned into underscores (systemd reserves ``-`` for the slice hierarchy).
    """
    qos = QosClass(qos)
    tier = {QosClass.GUARANTEED: "", QosClass.BURSTABLE: "burstable",
            QosClass.BEST_EFFORT: "besteffort"}[qos]
    if driver == "cgroupfs":
        return f"/kubepods/{tier}/pod{pod_uid}" if tier else f"/kubepods/pod{pod_uid}"
    if driver == "systemd":
        escaped = pod_uid.replace("-", "_")
        return f"kubepods-{tier}-pod{escaped}.slice" if tier else f"kubepods-pod{escaped}.slice"
    raise ValueError(f"unknown cgroup driver {driver!r} (cgroupfs or systemd)")


_MILLI = re.compile(r"([0-9]+)m")
_MEMORY = re.compile(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?")
_MEMORY_UNITS: Final = {None: 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
                        "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def milli_cpus(cpus: float | int | str | Decimal) -> int:
    """A CPU quantity in millicores: ``2`` -> 2000, ``0.5`` -> 500, ``"250m"`` -> 250.

    Like Kubernetes, fractions below a millicore round up.
    """
    if isinstance(cpus, str):
        text = cpus.strip()
        if match := _MILLI.fullmatch(text):
            return int(match.group(1))
        try:
            value = Decimal(text)
        except InvalidOperation:
            raise ValueError(f"not a CPU quantity: {cpus!r}") from None
    else:
        value = Decimal(str(cpus))
    if not value.is_finite() or value < 0:
        raise ValueError(f"not a CPU quantity: {cpus!r}")
    milli = value * 1000
    return int(milli.to_integral_value(rounding=ROUND_CEILING))


def memory_bytes(memory: int | str) -> int:
    """A memory quantity in bytes: ``134217728``, ``"128Mi"``, ``"1G"``."""
    if isinstance(memory, int):
        if memory < 0:
            raise ValueError(f"negative memory quantity: {memory}")
        return memory
    match = _MEMORY.fullmatch(memory.strip())
    if not match:
        raise ValueError(f"not a memory quantity: {memory!r}")
    value = Decimal(match.group(1)) * _MEMORY_UNITS[match.group(2)]
    return int(value.to_integral_value(rounding=ROUND_CEILING))


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


def container_resources(
    *,
    cpu_request: float | int | str | Decimal | None = None,
    cpu_limit: float | int | str | Decimal | None = None,
    memory_limit: int | str | None = None,
    cpu_period: int = DEFAULT_CPU_PERIOD,
) -> Resources:
    """What a kubelet puts in a container's ``LinuxContainerResources`` for these quantities.

    shares = max(2, milli * 1024 / 1000) of the request (the limit when there is no request),
    quota = max(1000, milli * period / 1000) of the limit (0 = unlimited), period = 100000.
    A Guaranteed container with N whole CPUs gets quota = N * period and shares = N * 1024.
    """
    request = cpu_request if cpu_request is not None else cpu_limit
    shares = MIN_SHARES
    if request is not None and (milli := milli_cpus(request)):
        shares = min(MAX_SHARES, max(MIN_SHARES, milli * 1024 // 1000))
    quota = 0
    if cpu_limit is not None and (milli := milli_cpus(cpu_limit)):
        quota = max(MIN_QUOTA, milli * cpu_period // 1000)
    memory = memory_bytes(memory_limit) if memory_limit is not None else 0
    return Resources(cpu_period=cpu_period, cpu_quota=quota, cpu_shares=shares,
                     memory_limit=memory)


def guaranteed(cpus: float | int | str | Decimal, memory: int | str) -> Resources:
    """Resources of a Guaranteed container (request == limit for CPU and memory)."""
    return container_resources(cpu_request=cpus, cpu_limit=cpus, memory_limit=memory)


# ---- results -----------------------------------------------------------------------------------


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
        return _pid_from_info(self.info)

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


def _decode_info(info: Mapping[str, str]) -> dict[str, object]:
    decoded: dict[str, object] = {}
    for key, value in info.items():
        try:
            decoded[key] = json.loads(value)
        except ValueError:
            decoded[key] = value
    return decoded


def _pid_from_info(info: Mapping[str, object]) -> int | None:
    pid = _dig(info, "info", "pid")
    if pid is None:
        pid = info.get("pid")
    return pid if isinstance(pid, int) and pid > 0 else None


def _serialize(message: _Message) -> bytes:
    return message.SerializeToString()


def _parser(kind: type[_Resp]) -> Callable[[bytes], _Resp]:
    def parse(data: bytes) -> _Resp:
        message = kind()
        message.ParseFromString(data)
        return message

    return parse


# ---- the client --------------------------------------------------------------------------------


class CriClient:
    """Synchronous CRI client over a unix socket (``address`` is the socket's path).

    Pod configs given to ``run_pod`` are remembered per pod id, because CreateContainer carries
    the sandbox config again (a kubelet does the same); pass ``pod_config=None`` to reuse it.
    """

    def __init__(self, address: str | Path, *, timeout: float = 60.0) -> None:
        path = str(address).removeprefix("unix://")
        self.address = path
        self.timeout = timeout
        self._channel = grpc.insecure_channel(f"unix://{path}")
        self._methods: dict[str, object] = {}
        self._pod_configs: dict[str, pb.PodSandboxConfig] = {}
        #: The cgroup parent of every pod run through this client, removed or not: runc deletes
        #: container cgroups but not these (a kubelet does), so the lab deletes them.
        self.cgroup_parents: set[str] = set()

    # -- plumbing --

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _call(self, service: str, method: str, request: _Message, response_type: type[_Resp],
              timeout: float | None = None) -> _Resp:
        """One unary call; the method path comes from the proto's service descriptor."""
        desc = pb.DESCRIPTOR.services_by_name[service]
        path = f"/{desc.full_name}/{desc.methods_by_name[method].name}"
        stub = self._methods.get(path)
        if stub is None:
            stub = self._channel.unary_unary(
                path, request_serializer=_serialize, response_deserializer=_parser(response_type))
            self._methods[path] = stub
        try:
            response = stub(request, timeout=self.timeout if timeout is None else timeout)  # type: ignore[operator]
        except grpc.RpcError as err:
            raise CriError(method, err.code(), err.details() or "") from None
        if not isinstance(response, response_type):
            raise TypeError(f"CRI {method} returned {type(response).__name__}")
        return response

    # -- runtime --

    def version(self, *, timeout: float | None = None) -> RuntimeVersion:
        resp = self._call(
            "RuntimeService", "Version", pb.VersionRequest(version=CRI_API_VERSION),
            pb.VersionResponse, timeout)
        return RuntimeVersion(version=resp.version, runtime_name=resp.runtime_name,
                              runtime_version=resp.runtime_version,
                              runtime_api_version=resp.runtime_api_version)

    # -- pods --

    @staticmethod
    def pod_sandbox_config(
        name: str,
        namespace: str = "default",
        uid: str | None = None,
        *,
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        cgroup_parent: str = "",
        log_directory: str = "",
        host_network: bool = True,
        pod_resources: Resources | None = None,
        attempt: int = 0,
    ) -> pb.PodSandboxConfig:
        """The ``PodSandboxConfig`` a kubelet would send (host networking unless told otherwise:
        the lab has no CNI). ``uid`` defaults to a fresh UUID."""
        uid = uid or str(uuid.uuid4())
        pod_labels = {"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": namespace,
                      "io.kubernetes.pod.uid": uid, **(labels or {})}
        namespaces = pb.NamespaceOption(
            network=pb.NODE if host_network else pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
        linux = pb.LinuxPodSandboxConfig(
            cgroup_parent=cgroup_parent,
            security_context=pb.LinuxSandboxSecurityContext(namespace_options=namespaces))
        if pod_resources is not None:
            linux.resources.CopyFrom(pod_resources.to_proto())
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace=namespace,
                                           attempt=attempt),
            hostname="" if host_network else name,
            log_directory=log_directory,
            labels=pod_labels,
            annotations=dict(annotations or {}),
            linux=linux)

    def run_pod_sandbox(self, config: pb.PodSandboxConfig, *, runtime_handler: str = "") -> str:
        """RunPodSandbox with a ready-made config; returns the sandbox id."""
        resp = self._call(
            "RuntimeService", "RunPodSandbox",
            pb.RunPodSandboxRequest(config=config, runtime_handler=runtime_handler),
            pb.RunPodSandboxResponse)
        self._pod_configs[resp.pod_sandbox_id] = config
        if config.linux.cgroup_parent:
            self.cgroup_parents.add(config.linux.cgroup_parent)
        return resp.pod_sandbox_id

    def run_pod(
        self,
        name: str,
        namespace: str = "default",
        uid: str | None = None,
        *,
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        cgroup_parent: str = "",
        log_directory: str = "",
        host_network: bool = True,
        pod_resources: Resources | None = None,
        runtime_handler: str = "",
    ) -> str:
        """Build a kubelet-like sandbox config and run it; returns the sandbox id."""
        config = self.pod_sandbox_config(
            name, namespace, uid, annotations=annotations, labels=labels,
            cgroup_parent=cgroup_parent, log_directory=log_directory, host_network=host_network,
            pod_resources=pod_resources)
        return self.run_pod_sandbox(config, runtime_handler=runtime_handler)

    def pod_config(self, pod_id: str) -> pb.PodSandboxConfig:
        """The config this client ran ``pod_id`` with (KeyError if it did not run it)."""
        return self._pod_configs[pod_id]

    def stop_pod(self, pod_id: str) -> None:
        """StopPodSandbox: kills every container of the pod (idempotent)."""
        self._call("RuntimeService", "StopPodSandbox",
                   pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), pb.StopPodSandboxResponse)

    def remove_pod(self, pod_id: str) -> None:
        """RemovePodSandbox: removes the pod and its containers (idempotent)."""
        self._call("RuntimeService", "RemovePodSandbox",
                   pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), pb.RemovePodSandboxResponse)
        self._pod_configs.pop(pod_id, None)

    def list_pods(self) -> list[PodInfo]:
        resp = self._call(
            "RuntimeService", "ListPodSandbox", pb.ListPodSandboxRequest(),
            pb.ListPodSandboxResponse)
        return [PodInfo(id=p.id, name=p.metadata.name, namespace=p.metadata.namespace,
                        uid=p.metadata.uid, ready=p.state == pb.SANDBOX_READY,
                        annotations=dict(p.annotations), labels=dict(p.labels))
                for p in resp.items]

    def pod_status(self, pod_id: str) -> PodStatus:
        resp = self._call(
            "RuntimeService", "PodSandboxStatus",
            pb.PodSandboxStatusRequest(pod_sandbox_id=pod_id, verbose=True),
            pb.PodSandboxStatusResponse)
        status = resp.status
        return PodStatus(id=status.id, name=status.metadata.name,
                         namespace=status.metadata.namespace, uid=status.metadata.uid,
                         ready=status.state == pb.SANDBOX_READY,
                         annotations=dict(status.annotations), info=_decode_info(resp.info))

    @contextmanager
    def pod(
        self,
        name: str,
        namespace: str = "default",
        uid: str | None = None,
        *,
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        cgroup_parent: str = "",
        log_directory: str = "",
        pod_resources: Resources | None = None,
    ) -> Iterator[str]:
        """``run_pod`` for a ``with`` block; the pod is stopped and removed on the way out."""
        pod_id = self.run_pod(name, namespace, uid, annotations=annotations, labels=labels,
                              cgroup_parent=cgroup_parent, log_directory=log_directory,
                              pod_resources=pod_resources)
        try:
            yield pod_id
        finally:
            try:
                self.stop_pod(pod_id)
            finally:
                self.remove_pod(pod_id)

    # -- containers --

    def create_container(
        self,
        pod_id: str,
        pod_config: pb.PodSandboxConfig | None,
        name: str,
        image: str,
        *,
        cpu_quota: int = 0,
        cpu_period: int = 0,
        cpu_shares: int = 0,
        memory_limit: int = 0,
        cpuset_cpus: str = "",
        cpuset_mems: str = "",
        resources: Resources | None = None,
        command: Sequence[str] | None = None,
        args: Sequence[str] | None = None,
        envs: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        attempt: int = 0,
    ) -> str:
        """CreateContainer in ``pod_id``; returns the container id.

        ``resources`` (e.g. from ``container_resources``) replaces the individual CPU/memory
        keywords. With ``pod_config=None`` the config ``run_pod`` used is sent again. An NRI
        plugin's rejection surfaces as ``CriError`` whose ``details`` hold the plugin's message.
        """
        if pod_config is None:
            pod_config = self.pod_config(pod_id)
        if resources is None:
            resources = Resources(cpu_period=cpu_period, cpu_quota=cpu_quota,
                                  cpu_shares=cpu_shares, memory_limit=memory_limit,
                                  cpuset_cpus=cpuset_cpus, cpuset_mems=cpuset_mems)
        meta = pod_config.metadata
        container_labels = {
            "io.kubernetes.container.name": name, "io.kubernetes.pod.name": meta.name,
            "io.kubernetes.pod.namespace": meta.namespace, "io.kubernetes.pod.uid": meta.uid,
            **(labels or {})}
        config = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=attempt),
            image=pb.ImageSpec(image=image),
            command=list(command or ()),
            args=list(args or ()),
            envs=[pb.KeyValue(key=k, value=v) for k, v in (envs or {}).items()],
            labels=container_labels,
            annotations=dict(annotations or {}),
            log_path=f"{name}/{attempt}.log" if pod_config.log_directory else "",
            linux=pb.LinuxContainerConfig(
                resources=resources.to_proto(),
                security_context=pb.LinuxContainerSecurityContext(
                    namespace_options=pb.NamespaceOption(
                        network=pod_config.linux.security_context.namespace_options.network,
                        pid=pb.CONTAINER, ipc=pb.POD))))
        resp = self._call(
            "RuntimeService", "CreateContainer",
            pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=config,
                                      sandbox_config=pod_config),
            pb.CreateContainerResponse)
        return resp.container_id

    def start(self, container_id: str) -> None:
        self._call("RuntimeService", "StartContainer",
                   pb.StartContainerRequest(container_id=container_id), pb.StartContainerResponse)

    def run_container(
        self,
        pod_id: str,
        name: str,
        image: str,
        *,
        resources: Resources | None = None,
        command: Sequence[str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> str:
        """create_container (with the config ``run_pod`` used) + start; returns the id."""
        container_id = self.create_container(pod_id, None, name, image, resources=resources,
                                             command=command, annotations=annotations)
        self.start(container_id)
        return container_id

    def stop(self, container_id: str, timeout: int = 0) -> None:
        """StopContainer: SIGTERM, then SIGKILL after ``timeout`` seconds (0: SIGKILL now)."""
        self._call("RuntimeService", "StopContainer",
                   pb.StopContainerRequest(container_id=container_id, timeout=timeout),
                   pb.StopContainerResponse,
                   timeout=self.timeout + timeout)

    def remove(self, container_id: str) -> None:
        self._call("RuntimeService", "RemoveContainer",
                   pb.RemoveContainerRequest(container_id=container_id), pb.RemoveContainerResponse)

    def update_resources(
        self,
        container_id: str,
        resources: Resources | None = None,
        *,
        cpuset_cpus: str = "",
        cpuset_mems: str = "",
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        """UpdateContainerResources (containerd leaves fields given as 0 / "" unchanged)."""
        if resources is None:
            resources = Resources(cpuset_cpus=cpuset_cpus, cpuset_mems=cpuset_mems)
        self._call("RuntimeService", "UpdateContainerResources",
                   pb.UpdateContainerResourcesRequest(
                       container_id=container_id, linux=resources.to_proto(),
                       annotations=dict(annotations or {})),
                   pb.UpdateContainerResourcesResponse)

    def container_status(self, container_id: str) -> ContainerStatus:
        resp = self._call(
            "RuntimeService", "ContainerStatus",
            pb.ContainerStatusRequest(container_id=container_id, verbose=True),
            pb.ContainerStatusResponse)
        status = resp.status
        info = _decode_info(resp.info)
        resources = (Resources.from_proto(status.resources.linux)
                     if status.HasField("resources") and status.resources.HasField("linux")
                     else None)
        return ContainerStatus(
            id=status.id, name=status.metadata.name,
            state=pb.ContainerState.Name(status.state), exit_code=status.exit_code,
            reason=status.reason, message=status.message, resources=resources,
            annotations=dict(status.annotations), pid=_pid_from_info(info), info=info)

    def list_containers(self, pod_id: str | None = None, *,
                        state: str | None = None) -> list[ContainerInfo]:
        """ListContainers, optionally of one pod and/or in one state (``CONTAINER_RUNNING``)."""
        filt = pb.ContainerFilter(pod_sandbox_id=pod_id or "")
        if state is not None:
            filt.state.state = pb.ContainerState.Value(state)
        resp = self._call(
            "RuntimeService", "ListContainers", pb.ListContainersRequest(filter=filt),
            pb.ListContainersResponse)
        return [ContainerInfo(id=c.id, pod_id=c.pod_sandbox_id, name=c.metadata.name,
                              state=pb.ContainerState.Name(c.state),
                              annotations=dict(c.annotations), labels=dict(c.labels))
                for c in resp.containers]

    # -- images --

    def image_status(self, image: str) -> pb.Image | None:
        """The image as the runtime knows it, or None when it is not present."""
        resp = self._call(
            "ImageService", "ImageStatus", pb.ImageStatusRequest(image=pb.ImageSpec(image=image)),
            pb.ImageStatusResponse)
        return resp.image if resp.HasField("image") else None
