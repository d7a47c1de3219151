"""A pod as the lab's kubelet runs it: the :class:`PodSpec` value, the ``PodSandboxConfig`` a
kubelet would send for it, the cgroup parent its QoS class gives it, and the :class:`Device`
and :class:`Mount` entries a container's config may carry."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from cpuset_adapters import kubelet
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_adapters.cri.results import Resources
from cpuset_core import QoS

QosClass = QoS
"""Kubernetes pod QoS classes (they decide the pod's cgroup parent)."""


def cgroup_parent(qos: QoS | str, pod_uid: str, *, driver: str = "cgroupfs") -> str:
    """:func:`cpuset_adapters.kubelet.cgroup_parent`, also for a QoS class given by name."""
    return kubelet.cgroup_parent(QoS(qos), pod_uid, driver=driver)


@dataclass(frozen=True, slots=True, kw_only=True)
class PodSpec:
    """A pod to run: its identity and what goes into its sandbox config (host networking unless
    told otherwise: the lab has no CNI). ``uid=None`` means a fresh UUID for each config."""

    name: str
    namespace: str = "default"
    uid: str | None = None
    annotations: Mapping[str, str] | None = None
    labels: Mapping[str, str] | None = None
    cgroup_parent: str = ""
    log_directory: str = ""
    host_network: bool = True
    pod_resources: Resources | None = None
    attempt: int = 0

    def sandbox_config(self) -> pb.PodSandboxConfig:
        """The ``PodSandboxConfig`` a kubelet would send for this pod."""
        uid = self.uid or str(uuid.uuid4())
        pod_labels = {"io.kubernetes.pod.name": self.name,
                      "io.kubernetes.pod.namespace": self.namespace,
                      "io.kubernetes.pod.uid": uid, **(self.labels or {})}
        namespaces = pb.NamespaceOption(
            network=pb.NODE if self.host_network else pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
        linux = pb.LinuxPodSandboxConfig(
            cgroup_parent=self.cgroup_parent,
            security_context=pb.LinuxSandboxSecurityContext(namespace_options=namespaces))
        if self.pod_resources is not None:
            linux.resources.CopyFrom(self.pod_resources.to_proto())
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=self.name, uid=uid, namespace=self.namespace,
                                           attempt=self.attempt),
            hostname="" if self.host_network else self.name,
            log_directory=self.log_directory,
            labels=pod_labels,
            annotations=dict(self.annotations or {}),
            linux=linux)


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    """A host device node given to a container: CRI's ``ContainerConfig.devices`` entry (what a
    kubelet sends for a device plugin's allocation), which the runtime passes on to NRI as
    ``Container.linux.devices``. ``container_path`` empty: the host path."""

    host_path: str
    container_path: str = ""
    permissions: str = "rw"

    def encoded(self) -> bytes:
        """This entry as field 8 (``repeated Device devices``) of an encoded ``ContainerConfig``.

        The product's CRI proto is the subset the plugin reads and has no ``Device``; protobuf
        keeps the field as an unknown one when these bytes are merged into a config, and sends
        it on with the rest (the runtime, with the full proto, reads it as devices)."""
        device = b"".join(_length_delimited(number, value.encode()) for number, value in (
            (1, self.container_path or self.host_path), (2, self.host_path),
            (3, self.permissions)))
        return _length_delimited(8, device)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mount:
    """A host path bind-mounted into a container: CRI's ``ContainerConfig.mounts`` entry (what
    a kubelet sends for a hostPath volume)."""

    container_path: str
    host_path: str
    readonly: bool = True

    def to_proto(self) -> pb.Mount:
        return pb.Mount(container_path=self.container_path, host_path=self.host_path,
                        readonly=self.readonly)


def _length_delimited(field_number: int, payload: bytes) -> bytes:
    """One protobuf field of wire type 2 (bytes, string, sub-message)."""
    return _varint(field_number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)
