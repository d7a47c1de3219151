"""A small synchronous CRI client: what a runtime runs (pods, containers, their status).

The daemon reads running containers through it when the runtime does not synchronize a
pre-installed plugin (``inventory.py``); the test lab extends it to drive the runtime like a
kubelet (``cpuset_lab.kubelet``). It sends the messages of ``proto/cri.proto`` (field numbers
are the real CRI's) as unary gRPC calls through a ``UnaryTransport`` (``transport.py``): by
default ``h2_unary`` (pure Python, no grpc import: the daemon's path), or the grpcio one the
lab passes (``grpc_transport``). What it returns is in ``results``.

Every failed call raises ``CriError`` carrying the gRPC status code and the runtime's own message;
when an NRI plugin rejects a container, CreateContainer fails and the plugin's reason is in
``CriError.details``.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Final, Protocol, Self, TypeVar

from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]

from cpuset_adapters.cri.h2_unary import H2UnaryTransport
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_adapters.cri.results import (
    ContainerInfo,
    ContainerStatus,
    PodInfo,
    PodStatus,
    Resources,
    RuntimeVersion,
    decode_info,
    pid_from_info,
)
from cpuset_adapters.cri.transport import CriError, UnaryTransport
from cpuset_adapters.grpc_status import StatusCode

__all__ = ["CRI_API_VERSION", "CriClient", "CriError", "UnaryTransport"]

#: The CRI API version this client speaks (``VersionRequest.version``).
CRI_API_VERSION: Final = "v1"


class _Message(Protocol):
    """What the client needs of a protobuf message (google.protobuf ships no type stubs)."""

    def SerializeToString(self) -> bytes: ...  # noqa: N802 - protobuf's name

    def ParseFromString(self, data: bytes) -> int: ...  # noqa: N802 - protobuf's name


_Resp = TypeVar("_Resp", bound=_Message)


# ---- the client --------------------------------------------------------------------------------


class CriClient:
    """Synchronous CRI client over a unix socket (``address`` is the socket's path): the runtime's
    version and what runs (pods, containers and their status). Driving the runtime like a
    kubelet is the test lab's (``cpuset_lab.kubelet``). ``transport`` carries the calls:
    ``H2UnaryTransport`` on ``address`` unless one is given."""

    def __init__(self, address: str | Path, *, timeout: float = 60.0,
                 transport: UnaryTransport | None = None) -> None:
        path = str(address).removeprefix("unix://")
        self.address = path
        self.timeout = timeout
        self.transport: UnaryTransport = (H2UnaryTransport(path) if transport is None
                                          else transport)

    # -- plumbing --

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def call(self, service: str, method: str, request: _Message, response_type: type[_Resp],
              timeout: float | None = None) -> _Resp:
        """One unary call; the method path comes from the proto's service descriptor. Raises
        ``CriError`` (an answer that does not parse as ``response_type`` is INTERNAL)."""
        desc = pb.DESCRIPTOR.services_by_name[service]
        path = f"/{desc.full_name}/{desc.methods_by_name[method].name}"
        data = self.transport.unary(path, request.SerializeToString(),
                                    self.timeout if timeout is None else timeout)
        response = response_type()
        try:
            response.ParseFromString(data)
        except DecodeError as err:
            raise CriError(method, StatusCode.INTERNAL,
                           f"the answer is not a {response_type.__name__}: {err}") from None
        return response

    # -- runtime --

    def version(self, *, timeout: float | None = None) -> RuntimeVersion:
        resp = self.call(
            "RuntimeService", "Version", pb.VersionRequest(version=CRI_API_VERSION),
            pb.VersionResponse, timeout)
        return RuntimeVersion(version=resp.version, runtime_name=resp.runtime_name,
                              runtime_version=resp.runtime_version,
                              runtime_api_version=resp.runtime_api_version)

    # -- pods --

    def list_pods(self) -> list[PodInfo]:
        resp = self.call(
            "RuntimeService", "ListPodSandbox", pb.ListPodSandboxRequest(),
            pb.ListPodSandboxResponse)
        return [PodInfo(id=p.id, name=p.metadata.name, namespace=p.metadata.namespace,
                        uid=p.metadata.uid, ready=p.state == pb.SANDBOX_READY,
                        annotations=dict(p.annotations), labels=dict(p.labels))
                for p in resp.items]

    def pod_status(self, pod_id: str) -> PodStatus:
        resp = self.call(
            "RuntimeService", "PodSandboxStatus",
            pb.PodSandboxStatusRequest(pod_sandbox_id=pod_id, verbose=True),
            pb.PodSandboxStatusResponse)
        status = resp.status
        return PodStatus(id=status.id, name=status.metadata.name,
                         namespace=status.metadata.namespace, uid=status.metadata.uid,
                         ready=status.state == pb.SANDBOX_READY,
                         annotations=dict(status.annotations), info=decode_info(resp.info))

    def container_status(self, container_id: str, *, verbose: bool = True) -> ContainerStatus:
        """ContainerStatus; ``verbose=False`` leaves out ``info`` (containerd's runtime spec,
        pid and cgroup path: tens of KB), which a caller after the state alone does not
        need."""
        resp = self.call(
            "RuntimeService", "ContainerStatus",
            pb.ContainerStatusRequest(container_id=container_id, verbose=verbose),
            pb.ContainerStatusResponse)
        status = resp.status
        info = decode_info(resp.info)
        resources = (Resources.from_proto(status.resources.linux)
                     if status.HasField("resources") and status.resources.HasField("linux")
                     else None)
        return ContainerStatus(
            id=status.id, name=status.metadata.name,
            state=pb.ContainerState.Name(status.state), exit_code=status.exit_code,
            reason=status.reason, message=status.message, resources=resources,
            annotations=dict(status.annotations), pid=pid_from_info(info), info=info,
            created_at=status.created_at, started_at=status.started_at,
            finished_at=status.finished_at)

    def list_containers(self, pod_id: str | None = None, *,
                        state: str | None = None) -> list[ContainerInfo]:
        """ListContainers, optionally of one pod and/or in one state (``CONTAINER_RUNNING``)."""
        filt = pb.ContainerFilter(pod_sandbox_id=pod_id or "")
        if state is not None:
            filt.state.state = pb.ContainerState.Value(state)
        resp = self.call(
            "RuntimeService", "ListContainers", pb.ListContainersRequest(filter=filt),
            pb.ListContainersResponse)
        return [ContainerInfo(id=c.id, pod_id=c.pod_sandbox_id, name=c.metadata.name,
                              state=pb.ContainerState.Name(c.state),
                              annotations=dict(c.annotations), labels=dict(c.labels),
                              created_at=c.created_at)
                for c in resp.containers]
