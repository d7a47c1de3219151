"""The DaemonSet's pod as a kubelet would run it: :func:`translate` reads the DaemonSet and
builds the CRI ``PodSandboxConfig`` (identity, namespaces, QoS cgroup parent, ports, the pod's
resources) around the one container the sibling modules translate."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_core import QoS
from cpuset_lab.daemonset.container import CONTAINER_FIELDS, container_config
from cpuset_lab.daemonset.container_resources import (
    NODE_CRITICAL_CLASS,
    linux_resources,
    oom_score_adj,
)
from cpuset_lab.daemonset.kubelet_volumes import ConfigMapVolume, HostPathVolume
from cpuset_lab.daemonset.lab_node import LabNode, Override, PodFacts
from cpuset_lab.daemonset.manifest import (
    FieldReader,
    ManifestError,
    NotApplied,
    Object,
    UntranslatedFieldError,
    as_bool,
    as_int,
    as_list,
    as_mapping,
    as_str,
    as_str_map,
    documents,
    find_one,
)
from cpuset_lab.daemonset.probes import Probe, http_probe, port_mappings
from cpuset_lab.daemonset.volumes import pod_volumes
from cpuset_lab.pod_spec import cgroup_parent

_POD_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
"""The characters Kubernetes draws a generated name's suffix from."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonSetPod:
    """The pod as a kubelet would run it. The CRI messages are kept encoded so the value stays
    frozen; :attr:`sandbox_config` and :attr:`container_config` decode a fresh copy each time."""

    name: str
    namespace: str
    uid: str
    sandbox_bytes: bytes = field(repr=False)
    container_bytes: bytes = field(repr=False)
    host_paths: tuple[HostPathVolume, ...]
    config_maps: tuple[ConfigMapVolume, ...]
    probes: tuple[Probe, ...]
    stop_timeout: int
    overrides: tuple[Override, ...]
    not_applied: tuple[NotApplied, ...]

    @property
    def sandbox_config(self) -> pb.PodSandboxConfig:
        config = pb.PodSandboxConfig()
        config.ParseFromString(self.sandbox_bytes)
        return config

    @property
    def container_config(self) -> pb.ContainerConfig:
        config = pb.ContainerConfig()
        config.ParseFromString(self.container_bytes)
        return config

    def prepare_volumes(self) -> None:
        """What the kubelet does before the container starts: check (or create) every host path
        by its type and write every ConfigMap volume."""
        for host_path in self.host_paths:
            host_path.check()
        for config_map in self.config_maps:
            config_map.write()


def translate(rendered: str, node: LabNode) -> DaemonSetPod:
    """Translate ``kubectl kustomize deploy/kubernetes``'s output into the pod a kubelet runs.

    Raises :class:`UntranslatedFieldError` for a field not carried over, :class:`ManifestError`
    for anything else it cannot translate.
    """
    objects = documents(rendered)
    reader = FieldReader()
    daemonset = reader.fields(find_one(objects, "DaemonSet"), "",
                              {"apiVersion", "kind", "metadata", "spec"})
    meta = reader.fields(daemonset["metadata"], "metadata", {"name", "namespace"})
    spec = reader.fields(daemonset["spec"], "spec", {"template"})
    template = reader.fields(spec["template"], "spec.template", {"metadata", "spec"})
    template_meta = reader.fields(template.get("metadata", {}), "spec.template.metadata",
                                  {"labels", "annotations"})
    labels = as_str_map(template_meta.get("labels", {}), "spec.template.metadata.labels")
    _check_selector(spec.get("selector"), labels)
    ds_name = as_str(meta["name"], "metadata.name")
    pod = PodFacts(name=f"{ds_name}-{node.pod_suffix or _suffix()}",
                   namespace=as_str(meta.get("namespace", "default"), "metadata.namespace"),
                   uid=node.pod_uid or str(uuid.uuid4()), labels=labels,
                   annotations=as_str_map(template_meta.get("annotations", {}),
                                          "spec.template.metadata.annotations"),
                   node=node, host_network=False)
    return _translate_pod(reader, objects, template["spec"], pod)


def _suffix() -> str:
    return "".join(secrets.choice(_POD_NAME_ALPHABET) for _ in range(5))


def _check_selector(selector: object, labels: Mapping[str, str]) -> None:
    """The controller only owns pods its selector matches; a template it would not match is a
    manifest the API server refuses, so it is refused here too."""
    if selector is None:
        return
    wanted = as_str_map(as_mapping(selector, "spec.selector").get("matchLabels", {}),
                        "spec.selector.matchLabels")
    if any(labels.get(key) != value for key, value in wanted.items()):
        raise ManifestError(f"spec.selector.matchLabels {wanted} do not match the template's "
                            f"labels {dict(labels)}")


_POD_FIELDS: Final = {"containers", "volumes", "hostNetwork", "hostPID", "hostIPC",
                      "terminationGracePeriodSeconds"}


def _translate_pod(reader: FieldReader, objects: list[Object], value: object,
                   pod: PodFacts) -> DaemonSetPod:
    path = "spec.template.spec"
    spec = reader.fields(value, path, set(_POD_FIELDS))
    namespaces = _namespaces(spec, pod)
    containers = as_list(spec["containers"], f"{path}.containers")
    if len(containers) != 1:
        raise UntranslatedFieldError(f"{path}.containers[1]", "one container per pod only")
    volumes = pod_volumes(reader, objects, spec.get("volumes", []), pod)
    container_path = f"{path}.containers[0]"
    container = reader.fields(containers[0], container_path, set(CONTAINER_FIELDS))
    ports = port_mappings(reader, container.get("ports", []), f"{container_path}.ports")
    resources, qos = linux_resources(reader, container.get("resources", {}),
                                     f"{container_path}.resources")
    critical = spec.get("priorityClassName") == NODE_CRITICAL_CLASS
    resources.oom_score_adj = oom_score_adj(qos, critical=critical)
    container_message, privileged = container_config(reader, container, container_path,
                                                      pod=pod, volumes=volumes,
                                                      resources=resources, namespaces=namespaces)
    sandbox = _sandbox(pod, namespaces, qos, ports, resources, privileged=privileged)
    probes = tuple(http_probe(reader, container[kind], f"{container_path}.{kind}", kind, ports)
                   for kind in ("livenessProbe", "readinessProbe", "startupProbe")
                   if kind in container)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    return DaemonSetPod(
        name=pod.name, namespace=pod.namespace, uid=pod.uid,
        sandbox_bytes=sandbox.SerializeToString(deterministic=True),
        container_bytes=container_message.SerializeToString(deterministic=True),
        host_paths=tuple(v for v in volumes.values() if isinstance(v, HostPathVolume)),
        config_maps=tuple(v for v in volumes.values() if isinstance(v, ConfigMapVolume)),
        probes=probes, stop_timeout=as_int(grace, f"{path}.terminationGracePeriodSeconds"),
        overrides=tuple(pod.overrides), not_applied=tuple(reader.not_applied))


def _namespaces(spec: Object, pod: PodFacts) -> pb.NamespaceOption:
    """The kubelet's namespace choice (pid CONTAINER unless hostPID; the host-network override
    turns a pod network into the node's and says so)."""
    path = "spec.template.spec"
    host_network = as_bool(spec.get("hostNetwork", False), f"{path}.hostNetwork")
    if not host_network and pod.node.host_network_override:
        pod.overrides.append(Override(
            f"{path}.hostNetwork", "false", "true (sandbox network NamespaceMode NODE)",
            "the lab has no CNI to give the pod a network namespace of its own"))
        host_network = True
    pod.host_network = host_network
    host_pid = as_bool(spec.get("hostPID", False), f"{path}.hostPID")
    host_ipc = as_bool(spec.get("hostIPC", False), f"{path}.hostIPC")
    return pb.NamespaceOption(network=pb.NODE if host_network else pb.POD,
                              pid=pb.NODE if host_pid else pb.CONTAINER,
                              ipc=pb.NODE if host_ipc else pb.POD)


def _sandbox(pod: PodFacts, namespaces: pb.NamespaceOption, qos: QoS,
             ports: Mapping[str, pb.PortMapping], resources: pb.LinuxContainerResources, *,
             privileged: bool) -> pb.PodSandboxConfig:
    """The ``PodSandboxConfig``: identity labels, QoS cgroup parent, the containers' ports, the
    pod's summed resources (one container: its own, without the per-container OOM score)."""
    labels = {**pod.labels, "io.kubernetes.pod.name": pod.name,
              "io.kubernetes.pod.namespace": pod.namespace, "io.kubernetes.pod.uid": pod.uid}
    seccomp = pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault
                                 if pod.node.seccomp_default else pb.SecurityProfile.Unconfined)
    security = pb.LinuxSandboxSecurityContext(namespace_options=namespaces,
                                              privileged=privileged, seccomp=seccomp)
    pod_resources = pb.LinuxContainerResources()
    pod_resources.CopyFrom(resources)
    pod_resources.oom_score_adj = 0
    linux = pb.LinuxPodSandboxConfig(
        cgroup_parent=cgroup_parent(qos, pod.uid, driver=pod.node.cgroup_driver),
        security_context=security, resources=pod_resources,
        overhead=pb.LinuxContainerResources())  # the kubelet sends it, empty without overhead
    log_dir = (str(pod.node.log_root / f"{pod.namespace}_{pod.name}_{pod.uid}")
               if pod.node.log_root else "")
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=pod.name, uid=pod.uid, namespace=pod.namespace),
        hostname="" if pod.host_network else pod.name, log_directory=log_dir,
        port_mappings=list(ports.values()), labels=labels, annotations=pod.annotations,
        linux=linux)
