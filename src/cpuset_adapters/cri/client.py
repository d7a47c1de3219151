"""A small synchronous CRI client: what a runtime runs (pods, containers, their status).

The daemon reads running containers through it when the runtime does not synchronize a
pre-installed plugin (``inventory.py``); the test lab extends it to drive the runtime like a
kubelet (``cpuset_lab.kubelet``). It speaks gRPC over the runtime's unix socket with the messages
of ``proto/cri.proto`` (field numbers are the real CRI's); what it returns is in ``results``.

Every failed call raises ``CriError`` carrying the gRPC status code and the runtime's own message;
when an NRI plugin rejects a container, CreateContainer fails and the plugin's reason is in
``CriError.details``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Final, Protocol, Self, TypeVar

import grpc

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

#: The CRI API version this client speaks (``VersionRequest.version``).
CRI_API_VERSION: Final = "v1"


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
    """Synchronous CRI client over a unix socket (``address`` is the socket's path): the runtime's
    version and what runs (pods, containers and their status). Driving the runtime like a
    kubelet is the test lab's (``cpuset_lab.kubelet``)."""

    def __init__(self, address: str | Path, *, timeout: float = 60.0) -> None:
        path = str(address).removeprefix("unix://")
        self.address = path
        self.timeout = timeout
        self._channel = grpc.insecure_channel(f"unix://{path}")
        self._methods: dict[str, object] = {}

    # -- plumbing --

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def call(self, service: str, method: str, request: _Message, response_type: type[_Resp],
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

    def container_status(self, container_id: str) -> ContainerStatus:
        resp = self.call(
            "RuntimeService", "ContainerStatus",
            pb.ContainerStatusRequest(container_id=container_id, verbose=True),
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
            annotations=dict(status.annotations), pid=pid_from_info(info), info=info)

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
                              annotations=dict(c.annotations), labels=dict(c.labels))
                for c in resp.containers]
