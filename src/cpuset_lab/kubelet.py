"""Driving a runtime the way a kubelet does, over CRI: run pods, create, start, stop, resize and
remove containers, with the resources a kubelet derives from Kubernetes quantities.

The e2e tests, the benchmarks and the real-runtime demo use it to run pods and containers on
containerd (and so through NRI and this project's plugin) without a kubelet or crictl. Every
failed call raises ``CriError``; when an NRI plugin rejects a container, CreateContainer fails and
the plugin's reason is in ``CriError.details``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from pathlib import Path
from typing import Final

from cpuset_adapters import kubelet
from cpuset_adapters.cri.client import CriClient, Resources
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_core import QoS

DEFAULT_CPU_PERIOD: Final = kubelet.CFS_PERIOD


QosClass = QoS
"""Kubernetes pod QoS classes (they decide the pod's cgroup parent)."""


def cgroup_parent(qos: QoS | str, pod_uid: str, *, driver: str = "cgroupfs") -> str:
    """:func:`cpuset_adapters.kubelet.cgroup_parent`, also for a QoS class given by name."""
    return kubelet.cgroup_parent(QoS(qos), pod_uid, driver=driver)


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
    shares = kubelet.cpu_shares(milli_cpus(request) if request is not None else None)
    quota = 0
    if cpu_limit is not None and (milli := milli_cpus(cpu_limit)):
        quota = kubelet.cpu_quota(milli, cpu_period)
    memory = memory_bytes(memory_limit) if memory_limit is not None else 0
    return Resources(cpu_period=cpu_period, cpu_quota=quota, cpu_shares=shares,
                     memory_limit=memory)


def guaranteed(cpus: float | int | str | Decimal, memory: int | str) -> Resources:
    """Resources of a Guaranteed container (request == limit for CPU and memory)."""
    return container_resources(cpu_request=cpus, cpu_limit=cpus, memory_limit=memory)



class KubeletClient(CriClient):
    """A :class:`CriClient` that also runs pods and containers the way a kubelet does.

    Pod configs given to ``run_pod`` are remembered per pod id, because CreateContainer carries
    the sandbox config again (a kubelet does the same); pass ``pod_config=None`` to reuse it.
    """

    def __init__(self, address: str | Path, *, timeout: float = 60.0) -> None:
        super().__init__(address, timeout=timeout)
        self._pod_configs: dict[str, pb.PodSandboxConfig] = {}
        #: The cgroup parent of every pod run through this client, removed or not: runc deletes
        #: container cgroups but not these (a kubelet does), so the lab deletes them.
        self.cgroup_parents: set[str] = set()

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
        resp = self.call(
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
        self.call("RuntimeService", "StopPodSandbox",
                   pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), pb.StopPodSandboxResponse)

    def remove_pod(self, pod_id: str) -> None:
        """RemovePodSandbox: removes the pod and its containers (idempotent)."""
        self.call("RuntimeService", "RemovePodSandbox",
                   pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), pb.RemovePodSandboxResponse)
        self._pod_configs.pop(pod_id, None)

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
        resp = self.call(
            "RuntimeService", "CreateContainer",
            pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=config,
                                      sandbox_config=pod_config),
            pb.CreateContainerResponse)
        return resp.container_id

    def start(self, container_id: str) -> None:
        self.call("RuntimeService", "StartContainer",
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
        self.call("RuntimeService", "StopContainer",
                   pb.StopContainerRequest(container_id=container_id, timeout=timeout),
                   pb.StopContainerResponse,
                   timeout=self.timeout + timeout)

    def remove(self, container_id: str) -> None:
        self.call("RuntimeService", "RemoveContainer",
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
        self.call("RuntimeService", "UpdateContainerResources",
                   pb.UpdateContainerResourcesRequest(
                       container_id=container_id, linux=resources.to_proto(),
                       annotations=dict(annotations or {})),
                   pb.UpdateContainerResourcesResponse)

    # -- images --

    def image_status(self, image: str) -> pb.Image | None:
        """The image as the runtime knows it, or None when it is not present."""
        resp = self.call(
            "ImageService", "ImageStatus", pb.ImageStatusRequest(image=pb.ImageSpec(image=image)),
            pb.ImageStatusResponse)
        return resp.image if resp.HasField("image") else None
