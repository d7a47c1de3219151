"""The pod's one container as the CRI ``ContainerConfig`` the kubelet sends: identity labels,
the lab's image, the command line after ``$(VAR)`` expansion, environment, security context and
mounts (resources come in already computed: the sandbox needs them too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_lab.daemonset.env import environment, expand
from cpuset_lab.daemonset.lab_node import Override, PodFacts
from cpuset_lab.daemonset.manifest import FieldReader, Object, as_list, as_str
from cpuset_lab.daemonset.security import security_context
from cpuset_lab.daemonset.volumes import Volume, container_mounts

CONTAINER_FIELDS: Final = frozenset({
    "name", "image", "command", "args", "workingDir", "env", "ports", "resources",
    "securityContext", "volumeMounts", "livenessProbe", "readinessProbe", "startupProbe"})
"""The container fields the translation carries over (ports, resources and probes are read by
the pod, the rest here)."""


def container_config(reader: FieldReader, container: Object, path: str, *, pod: PodFacts,
                     volumes: Mapping[str, Volume], resources: pb.LinuxContainerResources,
                     namespaces: pb.NamespaceOption) -> tuple[pb.ContainerConfig, bool]:
    """The ``ContainerConfig`` and whether the container is privileged."""
    name = as_str(container["name"], f"{path}.name")
    manifest_image = as_str(container["image"], f"{path}.image")
    if manifest_image != pod.node.image:
        pod.overrides.append(Override(f"{path}.image", manifest_image, pod.node.image,
                                      "the lab runs the image it built and imported"))
    envs = environment(reader, container.get("env", []), f"{path}.env", pod)
    env_values = {kv.key: kv.value for kv in envs}
    command = [expand(as_str(a, f"{path}.command"), env_values)
               for a in as_list(container.get("command", []), f"{path}.command")]
    args = [expand(as_str(a, f"{path}.args"), env_values)
            for a in as_list(container.get("args", []), f"{path}.args")]
    security, privileged = security_context(reader, container.get("securityContext", {}),
                                            f"{path}.securityContext")
    security.namespace_options.CopyFrom(namespaces)
    mounts = container_mounts(reader, container.get("volumeMounts", []), f"{path}.volumeMounts",
                              volumes)
    labels = {"io.kubernetes.container.name": name, "io.kubernetes.pod.name": pod.name,
              "io.kubernetes.pod.namespace": pod.namespace, "io.kubernetes.pod.uid": pod.uid}
    config = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image=pod.node.image),
        command=command, args=args,
        working_dir=as_str(container.get("workingDir", ""), f"{path}.workingDir"),
        envs=envs, mounts=mounts, labels=labels,
        log_path=f"{name}/0.log" if pod.node.log_root else "",
        linux=pb.LinuxContainerConfig(resources=resources, security_context=security))
    return config, privileged
