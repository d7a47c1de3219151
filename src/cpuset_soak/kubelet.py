"""The soak's kubelet (``parts.Kubelet``) on the lab's CRI client: pods run as a kubelet runs
them (QoS cgroup parent, the pin annotation, a runtime handler), each with a fresh uid, and
every pod uid and container id it made remembered for the end's check of leftover cgroups."""

from __future__ import annotations

import uuid
from typing import Final

from cpuset_adapters.cri.results import ContainerInfo, Resources
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, cgroup_parent

from .model import Pod
from .parts import Started

KEY: Final = "weka.io/cores-ids"
"""The pin annotation."""


class LabKubelet:
    """CRI calls through ``client`` (the lab's: it reconnects across containerd restarts);
    containers are created from ``image``."""

    def __init__(self, client: KubeletClient, image: str) -> None:
        self.client = client
        self.image = image
        self.uids: set[str] = set()
        self.cids: set[str] = set()

    def run_pod(self, pod: Pod) -> None:
        # Random per run: a rerun of a seed never meets an earlier run's cgroups. Remembered
        # before the call: a sandbox that failed half-way may still leave its cgroup.
        pod.uid = str(uuid.uuid4())
        self.uids.add(pod.uid)
        annotations = dict(pod.requests)
        if pod.annotation is not None:
            annotations[KEY] = pod.annotation
        pod.pod_id = self.client.run_pod(PodSpec(
            name=pod.name, namespace=pod.namespace, uid=pod.uid, annotations=annotations,
            cgroup_parent=cgroup_parent(pod.qos, pod.uid)), runtime_handler=pod.handler)

    def create(self, pod_id: str, name: str, resources: Resources,
               command: list[str] | None = None, *, attempt: int = 0) -> str:
        cid = self.client.create_container(pod_id, None, name, self.image,
                                           resources=resources, command=command,
                                           attempt=attempt)
        self.cids.add(cid)
        return cid

    def start(self, container_id: str) -> Started:
        self.client.start(container_id)
        status = self.client.container_status(container_id)
        return Started(pid=status.pid or 0, cgroups_path=status.cgroups_path or "")

    def state(self, container_id: str) -> str:
        return self.client.container_status(container_id).state

    def list_containers(self, pod_id: str | None = None, *,
                        state: str | None = None) -> list[ContainerInfo]:
        return self.client.list_containers(pod_id, state=state)

    def stop(self, container_id: str) -> None:
        self.client.stop(container_id)

    def remove(self, container_id: str) -> None:
        self.client.remove(container_id)

    def delete_pod(self, pod_id: str) -> None:
        self.client.stop_pod(pod_id)
        self.client.remove_pod(pod_id)

    def update_resources(self, container_id: str, resources: Resources | None = None, *,
                         cpuset_cpus: str = "") -> None:
        self.client.update_resources(container_id, resources, cpuset_cpus=cpuset_cpus)
