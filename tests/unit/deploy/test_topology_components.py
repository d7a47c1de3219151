"""The kustomize components beside the base: the topology publisher's (its own service account
and token, create and patch on NodeResourceTopology objects only, a policy keeping each node's
plugin to its own node's object, ``--publish-topology``) and the pin annotation's policy, and the
scheduler configuration that reads what the publisher writes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.kube_cel import evaluate_policy
from tests.unit.deploy.documents import documents, one
from tests.unit.deploy.schema import DEPLOY, KUBERNETES

COMPONENTS = KUBERNETES / "components"
PUBLISHER = COMPONENTS / "topology-publisher"
ACCOUNT = "system:serviceaccount:kube-system:nri-cpuset-topology"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"


@pytest.mark.parametrize("component", sorted(p.name for p in COMPONENTS.iterdir()))
def test_every_component_lists_each_of_its_files(component: str) -> None:
    directory = COMPONENTS / component
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    files = {p.name for p in directory.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files


def test_the_publisher_may_create_and_patch_node_resource_topologies_and_nothing_else() -> None:
    role = one(PUBLISHER / "rbac.yaml", "ClusterRole")
    assert role["rules"] == [{"apiGroups": ["topology.node.k8s.io"],
                              "resources": ["noderesourcetopologies"],
                              "verbs": ["create", "patch"]}]
    binding = one(PUBLISHER / "rbac.yaml", "ClusterRoleBinding")
    account = one(KUBERNETES / "serviceaccount.yaml", "ServiceAccount")["metadata"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"],
                                    "namespace": account["namespace"]}]
    assert f"system:serviceaccount:{account['namespace']}:{account['name']}" == ACCOUNT


def own_node(name: str, user: str = ACCOUNT, node: str | None = "worker-1",
             operation: str = "UPDATE") -> tuple[bool, bool, str | None]:
    policy = one(PUBLISHER / "own-node-policy.yaml", "ValidatingAdmissionPolicy")
    extra = {} if node is None else {NODE_NAME_KEY: [node]}
    verdict = evaluate_policy(policy, {"metadata": {"name": name}}, {
        "name": name, "operation": operation,
        "userInfo": {"username": user, "extra": extra}})
    return verdict.matched, verdict.allowed, verdict.message


def test_the_publisher_writes_its_own_nodes_object_only() -> None:
    assert own_node("worker-1") == (True, True, None)
    assert own_node("worker-1", operation="CREATE") == (True, True, None)
    matched, allowed, message = own_node("worker-2")
    assert (matched, allowed) == (True, False)
    assert message is not None
    assert "of its own node only, not worker-2" in message


def test_a_token_without_its_node_is_refused() -> None:
    assert own_node("worker-1", node=None)[:2] == (True, False)


def test_other_users_are_not_the_policys_business() -> None:
    assert own_node("worker-2", user="system:serviceaccount:kube-system:other")[0] is False


def test_the_policy_binding_denies() -> None:
    binding = one(PUBLISHER / "own-node-policy.yaml", "ValidatingAdmissionPolicyBinding")
    policy = one(PUBLISHER / "own-node-policy.yaml", "ValidatingAdmissionPolicy")
    assert binding["spec"] == {"policyName": policy["metadata"]["name"],
                               "validationActions": ["Deny"]}
    assert policy["spec"]["failurePolicy"] == "Fail"


def test_the_base_gives_the_node_name_from_the_downward_api() -> None:
    [daemonset] = documents(KUBERNETES / "daemonset.yaml")
    env = daemonset["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "NODE_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in env


def test_the_scheduler_configuration_filters_and_scores_with_the_published_topology() -> None:
    config = yaml.safe_load((DEPLOY / "scheduler" / "scheduler-config.yaml").read_text())
    assert config["kind"] == "KubeSchedulerConfiguration"
    [profile] = config["profiles"]
    assert profile["schedulerName"] == "topology-aware-scheduler"
    for point in ("filter", "score"):
        assert {"name": "NodeResourceTopologyMatch"} in profile["plugins"][point]["enabled"]
    [args] = [c["args"] for c in profile["pluginConfig"]
              if c["name"] == "NodeResourceTopologyMatch"]
    assert "cacheResyncPeriodSeconds" not in args  # no Reserve plugin is enabled for a cache


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_an_overlay_with_both_components_renders_the_publishers_daemonset(
        tmp_path: Path) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [str(Path("..") / "base")],
        "components": [str(Path("..") / "base" / "components" / name)
                       for name in ("topology-publisher", "pin-annotation-policy")]}))
    shutil.copytree(KUBERNETES, tmp_path / "base")
    rendered = subprocess.run(["kubectl", "kustomize", str(overlay)], check=True,
                              capture_output=True, text=True).stdout
    objects = [d for d in yaml.safe_load_all(rendered) if d]
    kinds = sorted(o["kind"] for o in objects)
    assert kinds.count("ValidatingAdmissionPolicy") == 2
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} <= set(kinds)
    [daemonset] = [o for o in objects if o["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "nri-cpuset-topology"
    assert pod["automountServiceAccountToken"] is True
    assert pod["containers"][0]["args"][-1] == "--publish-topology"
    [account] = [o for o in objects if o["kind"] == "ServiceAccount"]
    assert account["metadata"]["namespace"] == "kube-system"
