"""Driving a runtime the way a kubelet does, over CRI: run pods, create, start, stop, resize and
remove containers, with the resources a kubelet derives from Kubernetes quantities
(``resources``) and the sandbox configs it sends for pods (``pod_spec``).

The e2e tests, the benchmarks and the real-runtime demo use it to run pods and containers on
containerd (and so through NRI and this project's plugin) without a kubelet or crictl. Every
failed call raises ``CriError``; when an NRI plugin rejects a container, CreateContainer fails and
the plugin's reason is in ``CriError.details``. It speaks through grpcio unless told otherwise:
the tests drive containerd with a complete gRPC stack independent of the daemon's h2 one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from cpuset_adapters.cri.client import CriClient
from cpuset_adapters.cri.grpc_transport import GrpcTransport
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_adapters.cri.results import Resources
from cpuset_adapters.cri.transport import UnaryTransport
from cpuset_lab.pod_spec import Device, Mount, PodSpec
from cpuset_lab.status_resources import ReportedCpu, quantity, reported_cpu_limit, runtime_cpu_limit


class KubeletClient(CriClient):
    """A :class:`CriClient` that also runs pods and containers the way a kubelet does.

    Pod configs run through ``run_pod`` are remembered per pod id, because CreateContainer carries
    the sandbox config again (a kubelet does the same); pass ``pod_config=None`` to reuse it.
    Calls go through grpcio (``GrpcTransport``) unless ``transport`` is given.
    """

    def __init__(self, address: str | Path, *, timeout: float = 60.0,
                 transport: UnaryTransport | None = None) -> None:
        path = str(address).removeprefix("unix://")
        super().__init__(path, timeout=timeout,
                         transport=GrpcTransport(path) if transport is None else transport)
        self._pod_configs: dict[str, pb.PodSandboxConfig] = {}
        #: The cgroup parent of every pod run through this client, removed or not: runc deletes
        #: container cgroups but not these (a kubelet does), so the lab deletes them.
        self.cgroup_parents: set[str] = set()
        #: Each container's CPU limit as its spec says (what was last sent) and as its status
        #: last reported it: the kubelet's rule for ``status.resources`` reads both.
        self._spec_cpu: dict[str, int | None] = {}
        self._reported_cpu: dict[str, ReportedCpu] = {}

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

    def run_pod(self, spec: PodSpec, *, runtime_handler: str = "") -> str:
        """Run ``spec``'s kubelet-like sandbox config; returns the sandbox id."""
        return self.run_pod_sandbox(spec.sandbox_config(), runtime_handler=runtime_handler)

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
    def pod(self, spec: PodSpec, *, runtime_handler: str = "") -> Iterator[str]:
        """``run_pod`` for a ``with`` block; the pod is stopped and removed on the way out."""
        pod_id = self.run_pod(spec, runtime_handler=runtime_handler)
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
        devices: Sequence[Device] = (),
        mounts: Sequence[Mount] = (),
    ) -> str:
        """CreateContainer in ``pod_id``; returns the container id.

        ``resources`` (e.g. from ``container_resources``) replaces the individual CPU/memory
        keywords. With ``pod_config=None`` the config ``run_pod`` used is sent again.
        ``devices``: host device nodes the container is given (as a device plugin's allocation
        is). ``mounts``: host paths bind-mounted into it (hostPath volumes). An NRI plugin's
        rejection surfaces as ``CriError`` whose ``details`` hold the
        plugin's message.
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
            mounts=[mount.to_proto() for mount in mounts],
            log_path=f"{name}/{attempt}.log" if pod_config.log_directory else "",
            linux=pb.LinuxContainerConfig(
                resources=resources.to_proto(),
                security_context=pb.LinuxContainerSecurityContext(
                    namespace_options=pb.NamespaceOption(
                        network=pod_config.linux.security_context.namespace_options.network,
                        pid=pb.CONTAINER, ipc=pb.POD))))
        for device in devices:
            config.MergeFromString(device.encoded())
        resp = self.call(
            "RuntimeService", "CreateContainer",
            pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=config,
                                      sandbox_config=pod_config),
            pb.CreateContainerResponse)
        self._spec_cpu[resp.container_id] = runtime_cpu_limit(resources)
        # Created, not running: the kubelet's first status of it (ContainerCreating).
        self._reported_cpu[resp.container_id] = ReportedCpu(resp.container_id, None, running=False)
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
        devices: Sequence[Device] = (),
        mounts: Sequence[Mount] = (),
    ) -> str:
        """create_container (with the config ``run_pod`` used) + start; returns the id."""
        container_id = self.create_container(pod_id, None, name, image, resources=resources,
                                             command=command, annotations=annotations,
                                             devices=devices, mounts=mounts)
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
        if runtime_cpu_limit(resources) is not None:  # the resized pod's spec
            self._spec_cpu[container_id] = runtime_cpu_limit(resources)

    def status_cpu_limit(self, container_id: str) -> str | None:
        """``status.containerStatuses[].resources.limits.cpu`` as a kubelet would write it
        now for this running container (``cpuset_lab.status_resources``: from the runtime's
        CRI status, else the previous status's value), remembered for the next call."""
        status = self.container_status(container_id)
        reported = reported_cpu_limit(container_id, status.resources,
                                      spec_millis=self._spec_cpu.get(container_id),
                                      previous=self._reported_cpu.get(container_id),
                                      running=status.running)
        self._reported_cpu[container_id] = reported
        return quantity(reported.limit_millis)

    # -- images --

    def image_status(self, image: str) -> pb.Image | None:
        """The image as the runtime knows it, or None when it is not present."""
        resp = self.call(
            "ImageService", "ImageStatus", pb.ImageStatusRequest(image=pb.ImageSpec(image=image)),
            pb.ImageStatusResponse)
        return resp.image if resp.HasField("image") else None
