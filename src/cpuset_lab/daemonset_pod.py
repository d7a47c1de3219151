"""The DaemonSet's pod as a kubelet would run it: the rendered ``deploy/kubernetes`` manifests
translated into the CRI ``PodSandboxConfig`` and ``ContainerConfig`` a kubelet sends, the volumes
it prepares first and the probes it polls (issue 33).

Only the node's host paths change (each ``hostPath`` maps to a lab path; the lab's containerd
keeps its sockets in private directories), the image reference is the lab's, and, because the lab
has no CNI, ``host_network_override`` runs the sandbox in the node's network namespace although
the manifest says ``hostNetwork: false``; every such change is recorded in ``overrides``.

Strict on purpose: a field the translation does not carry over raises
:class:`UntranslatedFieldError` naming its path, so a manifest change cannot silently make the
lab's pod differ from the cluster's. Fields with no effect on one node without an API server are
listed in :data:`ALLOWED` with their reason and land in ``not_applied``.

Not produced (the kubelet adds them outside the manifest): the ``/etc/hosts`` and
termination-log mounts, the service-link environment, DNS config, the controller's
``controller-revision-hash`` label and the kubelet's bookkeeping annotations.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

import yaml

from cpuset_adapters import kubelet
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_core import QoS
from cpuset_lab.pod_spec import cgroup_parent
from cpuset_lab.pod_volumes import HOST_PATH_TYPES, ConfigMapVolume, HostPathVolume
from cpuset_lab.resources import memory_bytes, milli_cpus

Object = Mapping[str, object]


class ManifestError(ValueError):
    """The manifests cannot be translated (a missing object, a value of the wrong kind)."""


class UntranslatedFieldError(ManifestError):
    """A manifest field the translation does not carry over (and no reason says it may go)."""

    def __init__(self, path: str, detail: str = "") -> None:
        super().__init__(f"{path}: not translated to CRI{': ' + detail if detail else ''}")
        self.path = path


def _always(_value: object) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Allowance:
    """Why a field may be left untranslated, and which of its values that holds for."""

    reason: str
    accepts: Callable[[object], bool] = _always


ALLOWED: Final[Mapping[str, Allowance]] = {
    "metadata.labels": Allowance("labels of the DaemonSet object; its pods get the template's"),
    "metadata.annotations": Allowance("annotations of the DaemonSet object, not of its pods"),
    "spec.selector": Allowance("the controller's pod selector (checked to match the template "
                               "labels); the lab makes its one pod itself"),
    "spec.updateStrategy": Allowance("how the controller rolls pods over; the lab replaces its "
                                     "one pod itself"),
    "spec.minReadySeconds": Allowance("rollout pacing of the controller"),
    "spec.revisionHistoryLimit": Allowance("the controller's kept revisions"),
    "spec.template.spec.tolerations": Allowance("taints are matched by the controller; the lab "
                                                "node has none"),
    "spec.template.spec.nodeSelector": Allowance("node choice is the controller's; the lab node "
                                                 "is the node"),
    "spec.template.spec.affinity": Allowance("node choice is the controller's"),
    "spec.template.spec.schedulerName": Allowance("scheduling; no scheduler here"),
    "spec.template.spec.priorityClassName": Allowance(
        "preemption and scheduling priority need a scheduler (system-node-critical still "
        "sets the container's oom_score_adj, as the kubelet does)"),
    "spec.template.spec.serviceAccountName": Allowance("an API identity; no API server"),
    "spec.template.spec.serviceAccount": Allowance("an API identity; no API server"),
    "spec.template.spec.automountServiceAccountToken": Allowance(
        "false: no token volume, so nothing to mount", lambda value: value is False),
    "spec.template.spec.dnsPolicy": Allowance(
        "no cluster DNS: the sandbox keeps the runtime's resolv.conf",
        lambda value: value in ("ClusterFirst", "Default", "ClusterFirstWithHostNet")),
    "spec.template.spec.restartPolicy": Allowance(
        "restarting the container is the lab's loop, not a CRI field",
        lambda value: value == "Always"),
    "spec.template.spec.containers[].imagePullPolicy": Allowance(
        "the lab imports the image into containerd; nothing is pulled",
        lambda value: value in ("IfNotPresent", "Never")),
}
"""Manifest fields with no effect on one node without an API server, with the reason (a path's
list indices written ``[]``); an ``accepts`` test limits the values the reason holds for."""

NODE_CRITICAL_CLASS: Final = "system-node-critical"
"""The priority class that makes a pod node-critical to the kubelet (its OOM score below)."""
CRITICAL_OOM_SCORE_ADJ: Final = -997
"""The kubelet's oom_score_adj for a node-critical pod's (and a Guaranteed pod's) containers."""
BEST_EFFORT_OOM_SCORE_ADJ: Final = 1000
_POD_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
"""The characters Kubernetes draws a generated name's suffix from."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LabNode:
    """The lab's side of the translation: its node and the paths that stand for the node's.

    ``host_paths`` maps every ``hostPath.path`` of the manifest to the lab path used instead (an
    unmapped or unused entry is an error: a typo must not fall back to the real host path).
    ``volumes_dir`` is where the lab keeps non-host volumes (``<volumes_dir>/<volume name>``).
    ``node_ip``/``pod_ip`` feed ``status.hostIP``/``status.podIP`` fieldRefs (with host network
    the pod IP is the node IP). ``seccomp_default`` is the kubelet's ``seccompDefault`` setting
    (off by default: a sandbox with no pod seccompProfile runs Unconfined).
    """

    node_name: str
    image: str
    host_paths: Mapping[str, Path]
    volumes_dir: Path
    host_network_override: bool = True
    node_ip: str | None = None
    pod_ip: str | None = None
    pod_uid: str | None = None
    pod_suffix: str | None = None
    cgroup_driver: str = "cgroupfs"
    log_root: Path | None = None
    seccomp_default: bool = False


@dataclass(frozen=True, slots=True)
class NotApplied:
    """An allow-listed manifest field and why it has no effect here."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: not applied: {self.reason}"


@dataclass(frozen=True, slots=True)
class Override:
    """A manifest value the lab replaces, with the value used and why."""

    path: str
    manifest: str
    lab: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    """An ``httpGet`` probe to poll: the kubelet GETs ``http://<pod IP>:<port><path>`` every
    ``period`` seconds, gives up on one try after ``timeout`` and acts after
    ``failure_threshold`` failures in a row (``success_threshold`` successes to recover)."""

    kind: str  # liveness, readiness or startup
    path: str
    port: int
    scheme: str = "HTTP"
    initial_delay: int = 0
    period: int = 10
    timeout: int = 1
    failure_threshold: int = 3
    success_threshold: int = 1

    def url(self, host: str) -> str:
        return f"{self.scheme.lower()}://{host}:{self.port}{self.path}"


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


# ---- reading the YAML with its paths ---------------------------------------------------------


def _mapping(value: object, path: str) -> Object:
    if not isinstance(value, Mapping):
        raise ManifestError(f"{path}: expected a mapping, got {type(value).__name__}")
    return value


def _list(value: object, path: str) -> list[object]:
    if not isinstance(value, list):
        raise ManifestError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ManifestError(f"{path}: expected a string, got {value!r}")
    return value


def _int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ManifestError(f"{path}: expected an integer, got {value!r}")
    return value


def _bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise ManifestError(f"{path}: expected true or false, got {value!r}")
    return value


def _str_map(value: object, path: str) -> dict[str, str]:
    return {_str(k, path): _str(v, f"{path}.{k}") for k, v in _mapping(value, path).items()}


def _generic(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


class _Reader:
    """Walks the manifest, noting allow-listed fields and refusing unknown ones."""

    def __init__(self) -> None:
        self.not_applied: list[NotApplied] = []

    def fields(self, value: object, path: str, translated: set[str]) -> Object:
        """``value`` as a mapping, after checking every key is translated or allow-listed.
        ``path`` is the mapping's own path ("" for the document root)."""
        mapping = _mapping(value, path or "<root>")
        for key, item in mapping.items():
            if key in translated:
                continue
            full = f"{path}.{key}" if path else key
            allowance = ALLOWED.get(_generic(full))
            if allowance is None or not allowance.accepts(item):
                raise UntranslatedFieldError(full, "" if allowance is None
                                             else f"value {item!r} is not covered by the reason "
                                                  f"{allowance.reason!r}")
            self.not_applied.append(NotApplied(full, allowance.reason))
        return mapping


# ---- the translation -------------------------------------------------------------------------


def _objects(rendered: str) -> list[Object]:
    return [_mapping(doc, "<document>") for doc in yaml.safe_load_all(rendered) if doc]


def _one(objects: list[Object], kind: str, name: str | None = None) -> Object:
    found = [o for o in objects if o.get("kind") == kind
             and (name is None or _mapping(o.get("metadata"), "metadata").get("name") == name)]
    if len(found) != 1:
        raise ManifestError(f"expected one {kind}{f' named {name!r}' if name else ''}, "
                            f"found {len(found)}")
    return found[0]


@dataclass(slots=True)
class _Pod:
    """What the translation learns about the pod as it reads it."""

    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    node: LabNode
    host_network: bool
    overrides: list[Override] = field(default_factory=list)

    @property
    def pod_ip(self) -> str | None:
        return self.node.node_ip if self.host_network else self.node.pod_ip


def translate(rendered: str, node: LabNode) -> DaemonSetPod:
    """Translate ``kubectl kustomize deploy/kubernetes``'s output into the pod a kubelet runs.

    Raises :class:`UntranslatedFieldError` for a field not carried over, :class:`ManifestError`
    for anything else it cannot translate.
    """
    objects = _objects(rendered)
    reader = _Reader()
    daemonset = reader.fields(_one(objects, "DaemonSet"), "",
                              {"apiVersion", "kind", "metadata", "spec"})
    meta = reader.fields(daemonset["metadata"], "metadata", {"name", "namespace"})
    spec = reader.fields(daemonset["spec"], "spec", {"template"})
    template = reader.fields(spec["template"], "spec.template", {"metadata", "spec"})
    template_meta = reader.fields(template.get("metadata", {}), "spec.template.metadata",
                                  {"labels", "annotations"})
    labels = _str_map(template_meta.get("labels", {}), "spec.template.metadata.labels")
    _check_selector(spec.get("selector"), labels)
    ds_name = _str(meta["name"], "metadata.name")
    pod = _Pod(name=f"{ds_name}-{node.pod_suffix or _suffix()}",
               namespace=_str(meta.get("namespace", "default"), "metadata.namespace"),
               uid=node.pod_uid or str(uuid.uuid4()), labels=labels,
               annotations=_str_map(template_meta.get("annotations", {}),
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
    wanted = _str_map(_mapping(selector, "spec.selector").get("matchLabels", {}),
                      "spec.selector.matchLabels")
    if any(labels.get(key) != value for key, value in wanted.items()):
        raise ManifestError(f"spec.selector.matchLabels {wanted} do not match the template's "
                            f"labels {dict(labels)}")


_POD_FIELDS: Final = {"containers", "volumes", "hostNetwork", "hostPID", "hostIPC",
                      "terminationGracePeriodSeconds"}


def _translate_pod(reader: _Reader, objects: list[Object], value: object,
                   pod: _Pod) -> DaemonSetPod:
    path = "spec.template.spec"
    spec = reader.fields(value, path, set(_POD_FIELDS))
    namespaces = _namespaces(spec, pod)
    containers = _list(spec["containers"], f"{path}.containers")
    if len(containers) != 1:
        raise UntranslatedFieldError(f"{path}.containers[1]", "one container per pod only")
    volumes = _volumes(reader, objects, spec.get("volumes", []), pod)
    container_path = f"{path}.containers[0]"
    container = reader.fields(containers[0], container_path, set(_CONTAINER_FIELDS))
    ports = _ports(reader, container.get("ports", []), f"{container_path}.ports")
    resources, qos = _resources(reader, container.get("resources", {}),
                                f"{container_path}.resources")
    critical = spec.get("priorityClassName") == NODE_CRITICAL_CLASS
    resources.oom_score_adj = _oom_score_adj(qos, critical=critical)
    container_config, privileged = _container(reader, container, container_path, pod=pod,
                                              volumes=volumes, resources=resources,
                                              namespaces=namespaces)
    sandbox = _sandbox(pod, namespaces, qos, ports, resources, privileged=privileged)
    probes = tuple(_probe(reader, container[kind], f"{container_path}.{kind}", kind, ports)
                   for kind in ("livenessProbe", "readinessProbe", "startupProbe")
                   if kind in container)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    return DaemonSetPod(
        name=pod.name, namespace=pod.namespace, uid=pod.uid,
        sandbox_bytes=sandbox.SerializeToString(deterministic=True),
        container_bytes=container_config.SerializeToString(deterministic=True),
        host_paths=tuple(v for v in volumes.values() if isinstance(v, HostPathVolume)),
        config_maps=tuple(v for v in volumes.values() if isinstance(v, ConfigMapVolume)),
        probes=probes, stop_timeout=_int(grace, f"{path}.terminationGracePeriodSeconds"),
        overrides=tuple(pod.overrides), not_applied=tuple(reader.not_applied))


def _namespaces(spec: Object, pod: _Pod) -> pb.NamespaceOption:
    """The kubelet's namespace choice (pid CONTAINER unless hostPID; the host-network override
    turns a pod network into the node's and says so)."""
    path = "spec.template.spec"
    host_network = _bool(spec.get("hostNetwork", False), f"{path}.hostNetwork")
    if not host_network and pod.node.host_network_override:
        pod.overrides.append(Override(
            f"{path}.hostNetwork", "false", "true (sandbox network NamespaceMode NODE)",
            "the lab has no CNI to give the pod a network namespace of its own"))
        host_network = True
    pod.host_network = host_network
    host_pid = _bool(spec.get("hostPID", False), f"{path}.hostPID")
    host_ipc = _bool(spec.get("hostIPC", False), f"{path}.hostIPC")
    return pb.NamespaceOption(network=pb.NODE if host_network else pb.POD,
                              pid=pb.NODE if host_pid else pb.CONTAINER,
                              ipc=pb.NODE if host_ipc else pb.POD)


def _sandbox(pod: _Pod, namespaces: pb.NamespaceOption, qos: QoS,
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


# ---- the container ---------------------------------------------------------------------------

_CONTAINER_FIELDS: Final = {"name", "image", "command", "args", "workingDir", "env", "ports",
                            "resources", "securityContext", "volumeMounts", "livenessProbe",
                            "readinessProbe", "startupProbe"}


def _container(reader: _Reader, container: Object, path: str, *, pod: _Pod,
               volumes: Mapping[str, HostPathVolume | ConfigMapVolume],
               resources: pb.LinuxContainerResources,
               namespaces: pb.NamespaceOption) -> tuple[pb.ContainerConfig, bool]:
    """The ``ContainerConfig`` and whether the container is privileged."""
    name = _str(container["name"], f"{path}.name")
    manifest_image = _str(container["image"], f"{path}.image")
    if manifest_image != pod.node.image:
        pod.overrides.append(Override(f"{path}.image", manifest_image, pod.node.image,
                                      "the lab runs the image it built and imported"))
    envs = _env(reader, container.get("env", []), f"{path}.env", pod)
    env_values = {kv.key: kv.value for kv in envs}
    command = [_expand(_str(a, f"{path}.command"), env_values)
               for a in _list(container.get("command", []), f"{path}.command")]
    args = [_expand(_str(a, f"{path}.args"), env_values)
            for a in _list(container.get("args", []), f"{path}.args")]
    security, privileged = _security(reader, container.get("securityContext", {}),
                                     f"{path}.securityContext")
    security.namespace_options.CopyFrom(namespaces)
    mounts = _mounts(reader, container.get("volumeMounts", []), f"{path}.volumeMounts", volumes)
    labels = {"io.kubernetes.container.name": name, "io.kubernetes.pod.name": pod.name,
              "io.kubernetes.pod.namespace": pod.namespace, "io.kubernetes.pod.uid": pod.uid}
    config = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image=pod.node.image),
        command=command, args=args,
        working_dir=_str(container.get("workingDir", ""), f"{path}.workingDir"),
        envs=envs, mounts=mounts, labels=labels,
        log_path=f"{name}/0.log" if pod.node.log_root else "",
        linux=pb.LinuxContainerConfig(resources=resources, security_context=security))
    return config, privileged


_VAR_REF: Final = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def _expand(text: str, env: Mapping[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion: a defined variable's value, ``$$`` a literal ``$``,
    an undefined reference left as written."""
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return _VAR_REF.sub(one, text)


def _env(reader: _Reader, value: object, path: str, pod: _Pod) -> list[pb.KeyValue]:
    """Each ``env`` entry in order; values may refer to earlier ones with ``$(NAME)``."""
    envs: list[pb.KeyValue] = []
    for index, entry in enumerate(_list(value, path)):
        entry_path = f"{path}[{index}]"
        fields = reader.fields(entry, entry_path, {"name", "value", "valueFrom"})
        name = _str(fields["name"], f"{entry_path}.name")
        if "valueFrom" in fields:
            resolved = _field_ref(reader, fields["valueFrom"], f"{entry_path}.valueFrom", pod)
        else:
            earlier = {kv.key: kv.value for kv in envs}
            resolved = _expand(_str(fields.get("value", ""), f"{entry_path}.value"), earlier)
        envs.append(pb.KeyValue(key=name, value=resolved))
    return envs


_ANNOTATION_OR_LABEL: Final = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")


def _field_ref(reader: _Reader, value: object, path: str, pod: _Pod) -> str:
    """A downward-API ``fieldRef`` resolved to the value the kubelet would set."""
    value_from = reader.fields(value, path, {"fieldRef"})
    if "fieldRef" not in value_from:
        raise UntranslatedFieldError(path, "only fieldRef sources")
    ref = reader.fields(value_from["fieldRef"], f"{path}.fieldRef", {"fieldPath", "apiVersion"})
    field_path = _str(ref["fieldPath"], f"{path}.fieldRef.fieldPath")
    simple = {"metadata.name": pod.name, "metadata.namespace": pod.namespace,
              "metadata.uid": pod.uid, "spec.nodeName": pod.node.node_name,
              "status.hostIP": pod.node.node_ip, "status.hostIPs": pod.node.node_ip,
              "status.podIP": pod.pod_ip, "status.podIPs": pod.pod_ip}
    if field_path in simple:
        resolved = simple[field_path]
        if resolved is None:
            raise ManifestError(f"{path}.fieldRef: {field_path} needs the lab's node_ip "
                                f"(or pod_ip without host networking)")
        return resolved
    if match := _ANNOTATION_OR_LABEL.fullmatch(field_path):
        source = pod.labels if match.group(1) == "labels" else pod.annotations
        return source.get(match.group(2), "")
    raise UntranslatedFieldError(f"{path}.fieldRef.fieldPath", f"field path {field_path!r}")


def _security(reader: _Reader, value: object,
              path: str) -> tuple[pb.LinuxContainerSecurityContext, bool]:
    """The container's securityContext as the kubelet sends it (no pod-level context to merge:
    the pod's ``securityContext`` is not translated)."""
    sc = reader.fields(value, path, {"allowPrivilegeEscalation", "capabilities", "privileged",
                                     "readOnlyRootFilesystem", "runAsUser", "runAsGroup",
                                     "runAsNonRoot", "seccompProfile"})
    privileged = _bool(sc.get("privileged", False), f"{path}.privileged")
    out = pb.LinuxContainerSecurityContext(
        privileged=privileged,
        readonly_rootfs=_bool(sc.get("readOnlyRootFilesystem", False),
                              f"{path}.readOnlyRootFilesystem"),
        # allowPrivilegeEscalation unset leaves no_new_privs off; only an explicit false sets it.
        no_new_privs=sc.get("allowPrivilegeEscalation") is False)
    if "capabilities" in sc:
        caps = reader.fields(sc["capabilities"], f"{path}.capabilities", {"add", "drop"})
        out.capabilities.add_capabilities.extend(
            _str(c, f"{path}.capabilities.add") for c in _list(caps.get("add", []),
                                                               f"{path}.capabilities.add"))
        out.capabilities.drop_capabilities.extend(
            _str(c, f"{path}.capabilities.drop") for c in _list(caps.get("drop", []),
                                                                f"{path}.capabilities.drop"))
    if "runAsUser" in sc:
        out.run_as_user.value = _int(sc["runAsUser"], f"{path}.runAsUser")
    if "runAsGroup" in sc:
        out.run_as_group.value = _int(sc["runAsGroup"], f"{path}.runAsGroup")
    _check_non_root(sc, path)
    if "seccompProfile" in sc:
        out.seccomp.CopyFrom(_seccomp(reader, sc["seccompProfile"], f"{path}.seccompProfile"))
    return out, privileged


def _check_non_root(sc: Object, path: str) -> None:
    """``runAsNonRoot`` is the kubelet's own check, not a CRI field: false checks nothing; true
    with a known uid refuses uid 0; true with the uid left to the image needs the image's user,
    which this translation does not read."""
    if not _bool(sc.get("runAsNonRoot", False), f"{path}.runAsNonRoot"):
        return
    if "runAsUser" not in sc:
        raise UntranslatedFieldError(f"{path}.runAsNonRoot", "true needs the image's user")
    if sc["runAsUser"] == 0:
        raise ManifestError(f"{path}: runAsNonRoot is true but runAsUser is 0 (the kubelet "
                            f"refuses to start the container)")


def _seccomp(reader: _Reader, value: object, path: str) -> pb.SecurityProfile:
    profile = reader.fields(value, path, {"type"})
    kind = _str(profile["type"], f"{path}.type")
    if kind == "RuntimeDefault":
        return pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault)
    if kind == "Unconfined":
        return pb.SecurityProfile(profile_type=pb.SecurityProfile.Unconfined)
    raise UntranslatedFieldError(f"{path}.type", f"seccomp profile type {kind!r}")


# ---- resources -------------------------------------------------------------------------------

_RESOURCE_NAMES: Final = {"cpu", "memory"}


def _quantities(reader: _Reader, value: object, path: str) -> dict[str, str]:
    found = reader.fields(value, path, _RESOURCE_NAMES)
    return {k: str(v) for k, v in found.items()}


def _resources(reader: _Reader, value: object,
               path: str) -> tuple[pb.LinuxContainerResources, QoS]:
    """``LinuxContainerResources`` as the kubelet computes them, and the pod's QoS class.

    The API server copies a limit into a missing request, so that is done here too. Shares come
    from the CPU request; quota and period are only sent with a CPU limit (no limit: both 0,
    "not specified"); the memory limit goes as is.
    """
    fields = reader.fields(value, path, {"requests", "limits"})
    limits = _quantities(reader, fields.get("limits", {}), f"{path}.limits")
    requests = {**limits, **_quantities(reader, fields.get("requests", {}), f"{path}.requests")}
    out = pb.LinuxContainerResources(
        cpu_shares=kubelet.cpu_shares(milli_cpus(requests["cpu"]) if "cpu" in requests else None))
    if "cpu" in limits and (milli := milli_cpus(limits["cpu"])):
        out.cpu_period = kubelet.CFS_PERIOD
        out.cpu_quota = kubelet.cpu_quota(milli, kubelet.CFS_PERIOD)
    if "memory" in limits:
        out.memory_limit_in_bytes = memory_bytes(limits["memory"])
    return out, _qos(requests, limits)


def _qos(requests: Mapping[str, str], limits: Mapping[str, str]) -> QoS:
    """Guaranteed: CPU and memory limits equal to the requests; BestEffort: nothing asked;
    otherwise Burstable (one container, so the pod's class is the container's)."""
    if not requests and not limits:
        return QoS.BEST_EFFORT
    equal = all(name in limits and _amount(name, requests[name]) == _amount(name, limits[name])
                for name in _RESOURCE_NAMES if name in requests)
    if equal and set(limits) >= _RESOURCE_NAMES:
        return QoS.GUARANTEED
    return QoS.BURSTABLE


def _amount(name: str, quantity: str) -> int:
    return milli_cpus(quantity) if name == "cpu" else memory_bytes(quantity)


def _oom_score_adj(qos: QoS, *, critical: bool) -> int:
    """The kubelet's container oom_score_adj, where it needs no node facts: -997 for a
    system-node-critical or a Guaranteed pod, 1000 for BestEffort. A Burstable container's score
    depends on the node's memory capacity, which the lab does not pass: 0, not sent."""
    if critical or qos is QoS.GUARANTEED:
        return CRITICAL_OOM_SCORE_ADJ
    return BEST_EFFORT_OOM_SCORE_ADJ if qos is QoS.BEST_EFFORT else 0


# ---- ports and probes ------------------------------------------------------------------------

_PROTOCOLS: Final = {"TCP": pb.TCP, "UDP": pb.UDP, "SCTP": pb.SCTP}


def _ports(reader: _Reader, value: object, path: str) -> dict[str, pb.PortMapping]:
    """Each containerPort as the ``PortMapping`` the kubelet sends, by name (or number)."""
    ports: dict[str, pb.PortMapping] = {}
    for index, entry in enumerate(_list(value, path)):
        entry_path = f"{path}[{index}]"
        port = reader.fields(entry, entry_path, {"containerPort", "name", "protocol",
                                                 "hostPort", "hostIP"})
        protocol = _str(port.get("protocol", "TCP"), f"{entry_path}.protocol")
        if protocol not in _PROTOCOLS:
            raise ManifestError(f"{entry_path}.protocol: unknown protocol {protocol!r}")
        number = _int(port["containerPort"], f"{entry_path}.containerPort")
        ports[_str(port.get("name", str(number)), f"{entry_path}.name")] = pb.PortMapping(
            protocol=_PROTOCOLS[protocol], container_port=number,
            host_port=_int(port.get("hostPort", 0), f"{entry_path}.hostPort"),
            host_ip=_str(port.get("hostIP", ""), f"{entry_path}.hostIP"))
    return ports


_PROBE_KINDS: Final = {"livenessProbe": "liveness", "readinessProbe": "readiness",
                       "startupProbe": "startup"}


def _probe(reader: _Reader, value: object, path: str, kind: str,
           ports: Mapping[str, pb.PortMapping]) -> Probe:
    """An ``httpGet`` probe with the API server's defaults; a named port resolved through the
    container's ports, as the kubelet does."""
    probe = reader.fields(value, path, {"httpGet", "initialDelaySeconds", "periodSeconds",
                                        "timeoutSeconds", "failureThreshold",
                                        "successThreshold"})
    if "httpGet" not in probe:
        raise UntranslatedFieldError(path, "only httpGet probes")
    get = reader.fields(probe["httpGet"], f"{path}.httpGet", {"path", "port", "scheme"})
    port = get["port"]
    if isinstance(port, str):
        if port not in ports:
            raise ManifestError(f"{path}.httpGet.port: no container port named {port!r}")
        port = ports[port].container_port

    def number(key: str, default: int) -> int:
        return _int(probe.get(key, default), f"{path}.{key}")

    return Probe(kind=_PROBE_KINDS[kind], path=_str(get.get("path", "/"), f"{path}.httpGet.path"),
                 port=_int(port, f"{path}.httpGet.port"),
                 scheme=_str(get.get("scheme", "HTTP"), f"{path}.httpGet.scheme"),
                 initial_delay=number("initialDelaySeconds", 0),
                 period=number("periodSeconds", 10), timeout=number("timeoutSeconds", 1),
                 failure_threshold=number("failureThreshold", 3),
                 success_threshold=number("successThreshold", 1))


# ---- volumes and mounts ----------------------------------------------------------------------


def _volumes(reader: _Reader, objects: list[Object], value: object,
             pod: _Pod) -> dict[str, HostPathVolume | ConfigMapVolume]:
    """Every volume by name, hostPaths mapped to the lab's paths (all of them: an unmapped or an
    unused mapping is an error)."""
    path = "spec.template.spec.volumes"
    volumes: dict[str, HostPathVolume | ConfigMapVolume] = {}
    for index, entry in enumerate(_list(value, path)):
        entry_path = f"{path}[{index}]"
        volume = reader.fields(entry, entry_path, {"name", "hostPath", "configMap"})
        name = _str(volume["name"], f"{entry_path}.name")
        if "hostPath" in volume:
            volumes[name] = _host_path(reader, volume["hostPath"], f"{entry_path}.hostPath",
                                       name, pod)
        elif "configMap" in volume:
            volumes[name] = _config_map(reader, objects, volume["configMap"],
                                        f"{entry_path}.configMap", name=name, pod=pod)
        else:
            raise UntranslatedFieldError(entry_path, "a volume with no hostPath or configMap")
    used = {v.manifest_path for v in volumes.values() if isinstance(v, HostPathVolume)}
    if unused := sorted(set(pod.node.host_paths) - used):
        raise ManifestError(f"lab host_paths {unused} name no hostPath volume of the manifest")
    return volumes


def _host_path(reader: _Reader, value: object, path: str, name: str,
               pod: _Pod) -> HostPathVolume:
    host = reader.fields(value, path, {"path", "type"})
    manifest_path = _str(host["path"], f"{path}.path")
    kind = _str(host.get("type", ""), f"{path}.type")
    if kind not in HOST_PATH_TYPES:
        raise ManifestError(f"{path}.type: unknown hostPath type {kind!r}")
    if manifest_path not in pod.node.host_paths:
        raise ManifestError(f"{path}.path: no lab path given for {manifest_path} "
                            f"(volume {name!r})")
    lab_path = Path(pod.node.host_paths[manifest_path])
    pod.overrides.append(Override(f"{path}.path", manifest_path, str(lab_path),
                                  "the lab node's own path for it"))
    return HostPathVolume(name=name, manifest_path=manifest_path, lab_path=lab_path, type=kind)


def _config_map(reader: _Reader, objects: list[Object], value: object, path: str, *,
                name: str, pod: _Pod) -> ConfigMapVolume:
    """The ConfigMap's files from the same manifests: every key, or only the ``items``."""
    source = reader.fields(value, path, {"name", "items"})
    config_map = _str(source["name"], f"{path}.name")
    found = reader.fields(_one(objects, "ConfigMap", config_map), f"<ConfigMap {config_map}>",
                          {"apiVersion", "kind", "metadata", "data"})
    data = _str_map(found.get("data", {}), f"<ConfigMap {config_map}>.data")
    files = dict(data)
    if "items" in source:
        files = {}
        for index, entry in enumerate(_list(source["items"], f"{path}.items")):
            item_path = f"{path}.items[{index}]"
            item = reader.fields(entry, item_path, {"key", "path"})
            key = _str(item["key"], f"{item_path}.key")
            if key not in data:
                raise ManifestError(f"{item_path}.key: ConfigMap {config_map!r} has no {key!r}")
            files[_str(item["path"], f"{item_path}.path")] = data[key]
    return ConfigMapVolume(name=name, config_map=config_map,
                           directory=pod.node.volumes_dir / name, files=MappingProxyType(files))


_PROPAGATION: Final = {"None": pb.PROPAGATION_PRIVATE,
                       "HostToContainer": pb.PROPAGATION_HOST_TO_CONTAINER,
                       "Bidirectional": pb.PROPAGATION_BIDIRECTIONAL}


def _mounts(reader: _Reader, value: object, path: str,
            volumes: Mapping[str, HostPathVolume | ConfigMapVolume]) -> list[pb.Mount]:
    """Each volumeMount as a CRI ``Mount`` of the volume's lab path. A ConfigMap volume is always
    read-only (the kubelet mounts API data volumes read-only whatever the mount says)."""
    mounts = []
    for index, entry in enumerate(_list(value, path)):
        entry_path = f"{path}[{index}]"
        mount = reader.fields(entry, entry_path, {"name", "mountPath", "readOnly",
                                                  "mountPropagation"})
        name = _str(mount["name"], f"{entry_path}.name")
        if name not in volumes:
            raise ManifestError(f"{entry_path}.name: no volume named {name!r}")
        volume = volumes[name]
        propagation = _str(mount.get("mountPropagation", "None"),
                           f"{entry_path}.mountPropagation")
        if propagation not in _PROPAGATION:
            raise ManifestError(f"{entry_path}.mountPropagation: unknown mode {propagation!r}")
        is_config = isinstance(volume, ConfigMapVolume)
        host_path = volume.directory if isinstance(volume, ConfigMapVolume) else volume.lab_path
        mounts.append(pb.Mount(
            container_path=_str(mount["mountPath"], f"{entry_path}.mountPath"),
            host_path=str(host_path),
            readonly=is_config or _bool(mount.get("readOnly", False), f"{entry_path}.readOnly"),
            propagation=_PROPAGATION[propagation]))
    return mounts
