"""The DaemonSet's pod, translated from the real ``kubectl kustomize deploy/kubernetes`` output
into what a kubelet sends over CRI (the kubelet's volume behaviours: test_kubelet_volumes.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_core import QoS
from cpuset_lab.daemonset import (
    ALLOWED,
    DaemonSetPod,
    HostPathCheckError,
    LabNode,
    ManifestError,
    UntranslatedFieldError,
    translate,
)
from cpuset_lab.daemonset.container_resources import linux_resources
from cpuset_lab.daemonset.manifest import FieldReader
from tests.unit.deploy.schema import KUBERNETES

HOST_PATHS = ["/var/run/nri", "/run/containerd", "/run/dbus", "/sys", "/sys/fs/cgroup",
              "/var/lib/kubelet/cpu_manager_state", "/run/nri-cpuset"]
CONTAINER = "spec.template.spec.containers[0]"


@pytest.fixture(scope="module")
def rendered() -> str:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    return subprocess.run(["kubectl", "kustomize", str(KUBERNETES)], check=True,
                          capture_output=True, text=True).stdout


def _node(tmp: Path, **changes: Any) -> LabNode:
    params: dict[str, Any] = {
        "node_name": "lab-node", "image": "localhost/nri-cpuset:lab",
        "host_paths": {p: tmp / "host" / p.lstrip("/") for p in HOST_PATHS},
        "volumes_dir": tmp / "volumes", "pod_uid": "0000-uid", "pod_suffix": "x2z4q"}
    params.update(changes)
    return LabNode(**params)


@pytest.fixture
def pod(rendered: str, tmp_path: Path) -> DaemonSetPod:
    return translate(rendered, _node(tmp_path))


def _edited(rendered: str, edit: Any) -> str:
    """The rendered manifests with ``edit(daemonset)`` applied."""
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    edit(next(d for d in docs if d["kind"] == "DaemonSet"))
    return yaml.safe_dump_all(docs)


def _pod_spec(daemonset: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = daemonset["spec"]["template"]["spec"]
    return spec


# ---- the real manifests --------------------------------------------------------------------


def test_the_pod_gets_a_generated_name_and_the_template_labels(pod: DaemonSetPod) -> None:
    sandbox = pod.sandbox_config
    assert (pod.name, pod.namespace, pod.uid) == ("nri-cpuset-x2z4q", "kube-system", "0000-uid")
    assert sandbox.metadata == pb.PodSandboxMetadata(name="nri-cpuset-x2z4q", uid="0000-uid",
                                                     namespace="kube-system")
    assert sandbox.labels["app.kubernetes.io/name"] == "nri-cpuset"
    assert sandbox.labels["io.kubernetes.pod.uid"] == "0000-uid"


def test_a_generated_suffix_uses_kubernetes_name_characters(rendered: str,
                                                            tmp_path: Path) -> None:
    name = translate(rendered, _node(tmp_path, pod_suffix=None)).name
    prefix, _, suffix = name.rpartition("-")
    assert prefix == "nri-cpuset"
    assert len(suffix) == 5
    assert set(suffix) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_the_sandbox_is_burstable_and_runs_in_the_node_network(pod: DaemonSetPod) -> None:
    linux = pod.sandbox_config.linux
    assert linux.cgroup_parent == "/kubepods/burstable/pod0000-uid"
    assert linux.security_context.namespace_options == pb.NamespaceOption(
        network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD)
    assert pod.sandbox_config.hostname == ""
    [override] = [o for o in pod.overrides if o.path.endswith("hostNetwork")]
    assert override.manifest == "false"
    assert "no CNI" in override.reason


def test_without_the_override_the_pod_keeps_its_own_network(rendered: str,
                                                            tmp_path: Path) -> None:
    pod = translate(rendered, _node(tmp_path, host_network_override=False))
    namespaces = pod.sandbox_config.linux.security_context.namespace_options
    assert namespaces.network == pb.POD
    assert pod.sandbox_config.hostname == pod.name
    assert not [o for o in pod.overrides if o.path.endswith("hostNetwork")]


def test_the_container_security_context_is_the_manifests(pod: DaemonSetPod) -> None:
    security = pod.container_config.linux.security_context
    assert list(security.capabilities.drop_capabilities) == ["ALL"]
    assert list(security.capabilities.add_capabilities) == []
    assert security.no_new_privs
    assert security.readonly_rootfs
    assert not security.privileged
    # uid/gid 0 are sent (an unset Int64Value would mean "the image's user").
    assert security.HasField("run_as_user")
    assert security.run_as_user.value == 0
    assert security.HasField("run_as_group")
    assert security.run_as_group.value == 0
    assert security.HasField("seccomp")
    assert security.seccomp.profile_type == pb.SecurityProfile.RuntimeDefault
    assert security.namespace_options.network == pb.NODE


def test_every_mount_has_its_lab_path_and_readonly_flag(pod: DaemonSetPod,
                                                        tmp_path: Path) -> None:
    host = tmp_path / "host"
    mounts = {m.container_path: (m.host_path, m.readonly)
              for m in pod.container_config.mounts}
    assert mounts == {
        "/var/run/nri": (str(host / "var/run/nri"), False),
        "/host/sys": (str(host / "sys"), True),
        "/var/lib/kubelet/cpu_manager_state": (
            str(host / "var/lib/kubelet/cpu_manager_state"), True),
        "/host/cgroup": (str(host / "sys/fs/cgroup"), False),
        "/run/nri-cpuset": (str(host / "run/nri-cpuset"), False),
        "/etc/nri-cpuset": (str(tmp_path / "volumes" / "config"), True),
        "/run/containerd": (str(host / "run/containerd"), True),
        "/run/dbus": (str(host / "run/dbus"), True),
    }
    assert {m.propagation for m in pod.container_config.mounts} == {pb.PROPAGATION_PRIVATE}



def test_a_config_map_mount_is_read_only_whatever_the_mount_says(rendered: str,
                                                                 tmp_path: Path) -> None:
    def edit(daemonset: dict[str, Any]) -> None:
        for mount in _pod_spec(daemonset)["containers"][0]["volumeMounts"]:
            mount.pop("readOnly", None)
    pod = translate(_edited(rendered, edit), _node(tmp_path))
    readonly = {m.container_path: m.readonly for m in pod.container_config.mounts}
    assert readonly["/etc/nri-cpuset"]
    assert not readonly["/host/sys"]

def test_the_command_line_environment_and_image(pod: DaemonSetPod) -> None:
    config = pod.container_config
    assert list(config.args) == ["run", "--config", "/etc/nri-cpuset/config.toml",
                                 "--sysfs-root", "/host/sys"]
    assert list(config.command) == []
    assert [(e.key, e.value) for e in config.envs] == [("NODE_NAME", "lab-node")]
    assert config.image.image == "localhost/nri-cpuset:lab"
    assert config.metadata.name == "nri-cpuset"
    [image] = [o for o in pod.overrides if o.path.endswith(".image")]
    assert image.manifest.startswith("nri-cpuset:")


def test_resources_are_the_kubelets(pod: DaemonSetPod) -> None:
    resources = pod.container_config.linux.resources
    assert resources.memory_limit_in_bytes == 256 * 2**20
    assert resources.cpu_shares == 51  # 50m: 50 * 1024 / 1000
    assert (resources.cpu_quota, resources.cpu_period) == (0, 0)  # no CPU limit
    assert resources.oom_score_adj == -997  # system-node-critical
    assert pod.sandbox_config.linux.resources.memory_limit_in_bytes == 256 * 2**20


def test_the_probes_poll_the_named_metrics_port(pod: DaemonSetPod) -> None:
    probes = {p.kind: p for p in pod.probes}
    assert set(probes) == {"liveness", "readiness"}
    assert (probes["liveness"].path, probes["liveness"].port) == ("/healthz", 9477)
    assert (probes["liveness"].period, probes["liveness"].timeout,
            probes["liveness"].failure_threshold) == (10, 2, 3)
    assert (probes["readiness"].path, probes["readiness"].port) == ("/readyz", 9477)
    assert (probes["readiness"].period, probes["readiness"].failure_threshold) == (5, 2)
    assert probes["readiness"].url("127.0.0.1") == "http://127.0.0.1:9477/readyz"
    [port] = pod.sandbox_config.port_mappings
    assert (port.container_port, port.protocol, port.host_port) == (9477, pb.TCP, 0)


def test_the_grace_period_is_the_stop_timeout(pod: DaemonSetPod) -> None:
    assert pod.stop_timeout == 10


def test_fields_without_effect_are_listed_with_their_reason(pod: DaemonSetPod) -> None:
    listed = {n.path: n.reason for n in pod.not_applied}
    for path in ("spec.template.spec.tolerations", "spec.template.spec.nodeSelector",
                 "spec.template.spec.priorityClassName", "spec.updateStrategy",
                 "spec.template.spec.automountServiceAccountToken",
                 f"{CONTAINER}.imagePullPolicy"):
        assert listed[path]
    assert all(str(n).startswith(f"{n.path}: not applied: ") for n in pod.not_applied)
    assert all(a.reason for a in ALLOWED.values())


def test_the_config_map_volume_holds_the_manifests_config(pod: DaemonSetPod) -> None:
    [volume] = pod.config_maps
    assert volume.config_map == "nri-cpuset"
    assert list(volume.files) == ["config.toml"]
    assert 'listen = ":9477"' in volume.files["config.toml"]


def test_prepare_volumes_writes_the_config_and_checks_host_paths(pod: DaemonSetPod,
                                                                 tmp_path: Path) -> None:
    host = tmp_path / "host"
    for path in ("var/run/nri", "run/containerd", "sys/fs/cgroup"):
        (host / path).mkdir(parents=True)
    (host / "var/lib/kubelet").mkdir(parents=True)
    (host / "var/lib/kubelet/cpu_manager_state").write_text("{}")
    pod.prepare_volumes()
    assert (host / "run/dbus").is_dir()  # DirectoryOrCreate
    assert (host / "run/nri-cpuset").is_dir()
    assert "[pinning]" in (tmp_path / "volumes/config/config.toml").read_text()


def test_prepare_volumes_fails_on_a_missing_directory(pod: DaemonSetPod) -> None:
    with pytest.raises(HostPathCheckError, match=r"'nri-socket-dir'.*does not exist"):
        pod.prepare_volumes()


# ---- strictness ----------------------------------------------------------------------------


@pytest.mark.parametrize(("edit", "path"), [
    (lambda d: _pod_spec(d)["containers"][0].update(lifecycle={"preStop": {}}),
     f"{CONTAINER}.lifecycle"),
    (lambda d: _pod_spec(d).update(shareProcessNamespace=True),
     "spec.template.spec.shareProcessNamespace"),
    (lambda d: _pod_spec(d)["volumes"].append({"name": "scratch", "emptyDir": {}}),
     "spec.template.spec.volumes[8].emptyDir"),
    (lambda d: _pod_spec(d)["containers"][0]["securityContext"].update(
        procMount="Unmasked"), f"{CONTAINER}.securityContext.procMount"),
    (lambda d: _pod_spec(d)["containers"][0]["volumeMounts"][0].update(subPath="x"),
     f"{CONTAINER}.volumeMounts[0].subPath"),
    (lambda d: _pod_spec(d)["containers"][0]["livenessProbe"]["httpGet"].update(
        httpHeaders=[]), f"{CONTAINER}.livenessProbe.httpGet.httpHeaders"),
    (lambda d: _pod_spec(d)["containers"][0]["env"][0].update(comment="x"),
     f"{CONTAINER}.env[0].comment"),
    (lambda d: _pod_spec(d)["containers"][0]["resources"]["limits"].update(
        {"hugepages-2Mi": "2Mi"}), f"{CONTAINER}.resources.limits.hugepages-2Mi"),
    (lambda d: _pod_spec(d)["volumes"][7]["configMap"].update(defaultMode=0o400),
     "spec.template.spec.volumes[7].configMap.defaultMode"),
    (lambda d: _pod_spec(d).update(securityContext={"runAsUser": 1}),
     "spec.template.spec.securityContext"),
    (lambda d: _pod_spec(d).update(automountServiceAccountToken=True),
     "spec.template.spec.automountServiceAccountToken"),
    (lambda d: _pod_spec(d)["containers"][0].update(imagePullPolicy="Always"),
     f"{CONTAINER}.imagePullPolicy"),
])
def test_an_untranslated_field_is_refused_by_its_path(rendered: str, tmp_path: Path, edit: Any,
                                                      path: str) -> None:
    with pytest.raises(UntranslatedFieldError) as raised:
        translate(_edited(rendered, edit), _node(tmp_path))
    assert raised.value.path == path
    assert path in str(raised.value)


def test_every_host_path_must_be_mapped_and_every_mapping_used(rendered: str,
                                                               tmp_path: Path) -> None:
    node = _node(tmp_path)
    missing = dict(node.host_paths)
    del missing["/run/dbus"]
    with pytest.raises(ManifestError, match=r"no lab path given for /run/dbus"):
        translate(rendered, _node(tmp_path, host_paths=missing))
    extra = {**node.host_paths, "/var/run/typo": tmp_path}
    with pytest.raises(ManifestError, match=r"/var/run/typo"):
        translate(rendered, _node(tmp_path, host_paths=extra))


def test_downward_api_and_variable_expansion(rendered: str, tmp_path: Path) -> None:
    def edit(daemonset: dict[str, Any]) -> None:
        container = _pod_spec(daemonset)["containers"][0]
        container["env"] += [
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "WHO", "value": "$(POD).$(NS) $$(POD) $(UNSET)"}]
        container["args"].append("--node=$(NODE_NAME)")
    pod = translate(_edited(rendered, edit), _node(tmp_path, node_ip="10.0.0.7"))
    envs = {e.key: e.value for e in pod.container_config.envs}
    assert envs["POD"] == "nri-cpuset-x2z4q"
    assert envs["NS"] == "kube-system"
    assert envs["IP"] == "10.0.0.7"  # host network: the pod IP is the node's
    assert envs["WHO"] == "nri-cpuset-x2z4q.kube-system $(POD) $(UNSET)"
    assert pod.container_config.args[-1] == "--node=lab-node"
    with pytest.raises(ManifestError, match="node_ip"):
        translate(_edited(rendered, edit), _node(tmp_path))


def test_a_selector_that_misses_the_template_is_refused(rendered: str, tmp_path: Path) -> None:
    def edit(daemonset: dict[str, Any]) -> None:
        daemonset["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] = "other"
    with pytest.raises(ManifestError, match="matchLabels"):
        translate(_edited(rendered, edit), _node(tmp_path))


def test_the_value_is_frozen(pod: DaemonSetPod) -> None:
    config = pod.sandbox_config
    config.metadata.name = "changed"
    assert pod.sandbox_config.metadata.name == "nri-cpuset-x2z4q"
    with pytest.raises(AttributeError):
        pod.name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        pod.config_maps[0].files["config.toml"] = "x"  # type: ignore[index]


@pytest.mark.parametrize(("resources", "qos"), [
    ({}, QoS.BEST_EFFORT),
    ({"limits": {"cpu": "2", "memory": "1Gi"}}, QoS.GUARANTEED),  # requests default to limits
    ({"requests": {"cpu": "2000m", "memory": "1Gi"}, "limits": {"cpu": 2, "memory": "1024Mi"}},
     QoS.GUARANTEED),
    ({"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
     QoS.BURSTABLE),
    ({"limits": {"cpu": "1"}}, QoS.BURSTABLE),
])
def test_the_pods_qos_class_is_the_kubelets(resources: dict[str, object], qos: QoS) -> None:
    assert linux_resources(FieldReader(), resources, "resources")[1] is qos
