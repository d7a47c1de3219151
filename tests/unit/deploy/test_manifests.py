"""The Kubernetes manifests (deploy/kubernetes/) and the config files they and the hosts use."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import PurePosixPath
from typing import Any

import pytest
import yaml

from cpuset_adapters.systemd.connection import SYSTEM_BUS
from tests.unit.deploy.schema import (
    DEFAULT_CONFIG_PATH,
    DEFAULTS,
    EXAMPLE_CONFIG,
    KUBERNETES,
    setting,
    unknown_keys,
)

Object = dict[str, Any]


def _objects() -> list[Object]:
    objects = []
    for path in sorted(KUBERNETES.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


def _one(kind: str) -> Object:
    found = [o for o in _objects() if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _pod() -> Object:
    spec: Object = _one("DaemonSet")["spec"]["template"]["spec"]
    return spec


def _container() -> Object:
    containers = _pod()["containers"]
    assert len(containers) == 1
    container: Object = containers[0]
    return container


def _plugin_config() -> Object:
    return tomllib.loads(_one("ConfigMap")["data"]["config.toml"])


def _host_mounts() -> dict[str, tuple[Object, Object]]:
    """hostPath → (volume, mount) for every hostPath volume the container mounts."""
    volumes = {v["name"]: v for v in _pod()["volumes"]}
    return {volumes[m["name"]]["hostPath"]["path"]: (volumes[m["name"]], m)
            for m in _container()["volumeMounts"] if "hostPath" in volumes[m["name"]]}


def _arg(flag: str) -> str | None:
    args = _container()["args"]
    return args[args.index(flag) + 1] if flag in args else None


def _listen_port() -> int:
    listen = setting(_plugin_config(), "observability", "listen")
    return int(listen.rpartition(":")[2])


def test_kustomization_deploys_every_manifest_into_kube_system() -> None:
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    manifests = {p.name for p in KUBERNETES.glob("*.yaml")} - {"kustomization.yaml"}
    assert kustomization["namespace"] == "kube-system"
    assert set(kustomization["resources"]) == manifests
    assert {o["metadata"]["namespace"] for o in _objects()} == {"kube-system"}


def test_the_daemonset_is_node_critical_and_runs_on_every_linux_node() -> None:
    pod = _pod()
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert {"operator": "Exists"} in pod["tolerations"]
    assert pod["automountServiceAccountToken"] is False
    assert 0 < pod["terminationGracePeriodSeconds"] <= 30


def test_an_update_never_runs_two_instances_on_one_node() -> None:
    strategy = _one("DaemonSet")["spec"]["updateStrategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"]["maxSurge"] in (0, "0", "0%")
    assert strategy["rollingUpdate"]["maxUnavailable"] == 1


def test_the_nri_socket_directory_is_mounted_where_the_config_dials() -> None:
    socket = PurePosixPath(setting(_plugin_config(), "runtime", "nri_socket"))
    volume, mount = _host_mounts()["/var/run/nri"]
    assert mount["mountPath"] == str(socket.parent)
    assert volume["hostPath"]["type"] == "Directory"


def test_sys_is_mounted_read_only_and_is_the_plugins_sysfs_root() -> None:
    _, mount = _host_mounts()["/sys"]
    assert mount.get("readOnly") is True
    assert _arg("--sysfs-root") == mount["mountPath"]


def test_only_the_nri_and_status_socket_directories_and_the_cgroup_tree_are_writable() -> None:
    status_dir = str(PurePosixPath(setting(_plugin_config(), "runtime", "status_socket")).parent)
    writable = {path for path, (_, mount) in _host_mounts().items() if not mount.get("readOnly")}
    assert writable == {"/var/run/nri", status_dir, "/sys/fs/cgroup"}
    assert _host_mounts()[status_dir][1]["mountPath"] == status_dir


def test_the_cgroup_tree_is_mounted_where_the_config_writes_and_not_under_sys() -> None:
    _, mount = _host_mounts()["/sys/fs/cgroup"]
    assert setting(_plugin_config(), "runtime", "cgroup_root") == mount["mountPath"]
    assert not mount["mountPath"].startswith("/sys")  # AppArmor's default denies writes there
    assert setting(_plugin_config(), "runtime", "kernel_updates") is True


def test_the_cri_socket_is_mounted_read_only_where_the_config_reads_it() -> None:
    socket = PurePosixPath(setting(_plugin_config(), "runtime", "cri_socket"))
    volume, mount = _host_mounts()[str(socket.parent)]
    assert mount["mountPath"] == str(socket.parent)
    assert mount.get("readOnly") is True
    assert volume["hostPath"]["type"] == "Directory"


def test_the_system_bus_is_mounted_read_only_where_the_scope_writer_dials() -> None:
    socket = PurePosixPath(SYSTEM_BUS)
    volume, mount = _host_mounts()[str(socket.parent)]
    assert mount["mountPath"] == str(socket.parent)
    assert mount.get("readOnly") is True
    assert volume["hostPath"]["type"] == "DirectoryOrCreate"  # nodes without a bus still run
    assert setting(_plugin_config(), "runtime", "systemd_units") is not False


def test_the_kubelet_cpu_manager_state_is_read_where_the_config_says() -> None:
    state = setting(_plugin_config(), "runtime", "kubelet_cpu_manager_state")
    volume, mount = _host_mounts()[state]
    assert mount["mountPath"] == state
    assert mount.get("readOnly") is True
    # An unchecked missing hostPath is created as a directory, which would break the kubelet.
    assert volume["hostPath"]["type"] == "File"


def test_the_configmap_is_the_file_the_plugin_reads_and_stays_live() -> None:
    volumes = {v["name"]: v for v in _pod()["volumes"]}
    mounts = [m for m in _container()["volumeMounts"] if "configMap" in volumes[m["name"]]]
    assert len(mounts) == 1
    mount, volume = mounts[0], volumes[mounts[0]["name"]]["configMap"]
    assert volume["name"] == _one("ConfigMap")["metadata"]["name"]
    [item] = volume["items"]
    assert item["key"] == "config.toml"
    assert f"{mount['mountPath']}/{item['path']}" == DEFAULT_CONFIG_PATH
    assert "subPath" not in mount  # a subPath mount never sees ConfigMap updates
    assert _arg("--config") in (None, DEFAULT_CONFIG_PATH)


def test_probes_reach_the_health_endpoints_on_the_configured_port() -> None:
    container = _container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert ports.get(get["port"], get["port"]) == _listen_port()


def test_the_endpoints_listen_where_the_kubelet_probes() -> None:
    host = setting(_plugin_config(), "observability", "listen").rpartition(":")[0]
    if _pod().get("hostNetwork"):
        # The kubelet shares the pod's network namespace: loopback, probed on loopback.
        assert host == "127.0.0.1"
        assert {_container()[p]["httpGet"].get("host") for p in
                ("livenessProbe", "readinessProbe")} == {"127.0.0.1"}
    else:
        # The kubelet probes the pod IP from outside the pod: loopback would never answer.
        assert host in ("0.0.0.0", "")  # noqa: S104 - the pod's own network namespace


def test_requests_are_set_and_cpu_is_never_throttled() -> None:
    resources = _container()["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"])
    assert "memory" in resources["limits"]
    assert "cpu" not in resources["limits"]


def test_the_container_runs_as_root_without_any_capability() -> None:
    context = _container()["securityContext"]
    assert context["runAsUser"] == 0
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context.get("privileged", False) is False
    assert context["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_the_base_with_a_tagged_image() -> None:
    rendered = subprocess.run(["kubectl", "kustomize", str(KUBERNETES)], check=True,
                              capture_output=True, text=True).stdout
    [daemonset] = [o for o in yaml.safe_load_all(rendered) if o["kind"] == "DaemonSet"]
    image = daemonset["spec"]["template"]["spec"]["containers"][0]["image"]
    name, _, tag = image.rpartition(":")
    assert name
    assert tag not in ("", "latest")


@pytest.mark.parametrize("source", ["configmap", "example"])
def test_config_files_use_only_documented_keys(source: str) -> None:
    document = _plugin_config() if source == "configmap" else tomllib.loads(
        EXAMPLE_CONFIG.read_text())
    assert unknown_keys(document) == []


def test_the_example_config_lists_every_key_with_its_default() -> None:
    assert tomllib.loads(EXAMPLE_CONFIG.read_text()) == DEFAULTS
