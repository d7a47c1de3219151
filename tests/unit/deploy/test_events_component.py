"""The events' kustomize component: create and patch on events.k8s.io Events and nothing else,
for the service account the base defines and the topology publisher shares, and ``--events``;
rendered alone and beside the publisher's (one account, both flags)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.deploy.documents import one
from tests.unit.deploy.kustomize_render import needs_kubectl, pod_of, render
from tests.unit.deploy.schema import KUBERNETES

EVENTS = KUBERNETES / "components" / "events"


def test_the_plugin_may_create_and_patch_events_and_nothing_else() -> None:
    role = one(EVENTS / "rbac.yaml", "ClusterRole")
    assert role["rules"] == [{"apiGroups": ["events.k8s.io"], "resources": ["events"],
                              "verbs": ["create", "patch"]}]


def test_the_role_is_bound_to_the_service_account_the_publisher_shares() -> None:
    role = one(EVENTS / "rbac.yaml", "ClusterRole")
    binding = one(EVENTS / "rbac.yaml", "ClusterRoleBinding")
    account = one(KUBERNETES / "serviceaccount.yaml", "ServiceAccount")
    publisher = one(KUBERNETES / "components" / "topology-publisher" / "rbac.yaml",
                    "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "ClusterRole", "name": role["metadata"]["name"]}
    assert binding["subjects"] == publisher["subjects"] == [{
        "kind": "ServiceAccount", "name": account["metadata"]["name"],
        "namespace": account["metadata"]["namespace"]}]
    # The account alone grants nothing and mounts no token until a component asks.
    assert account["automountServiceAccountToken"] is False








@needs_kubectl
def test_the_base_alone_runs_without_a_token(tmp_path: Path) -> None:
    pod = pod_of(render(tmp_path))
    assert "serviceAccountName" not in pod
    assert pod["automountServiceAccountToken"] is False


@needs_kubectl
def test_the_events_alone_run_the_plugin_with_events_as_the_shared_account(
        tmp_path: Path) -> None:
    objects = render(tmp_path, "events")
    pod = pod_of(objects)
    assert pod["serviceAccountName"] == "nri-cpuset-topology"
    assert pod["automountServiceAccountToken"] is True
    assert pod["containers"][0]["args"][-1] == "--events"
    assert "--publish-topology" not in pod["containers"][0]["args"]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"] == [
        "nri-cpuset-events"]


@needs_kubectl
def test_the_events_beside_the_publisher_share_one_account_and_set_both_flags(
        tmp_path: Path) -> None:
    objects = render(tmp_path, "topology-publisher", "events")
    pod = pod_of(objects)
    assert pod["serviceAccountName"] == "nri-cpuset-topology"
    assert pod["containers"][0]["args"][-2:] == ["--publish-topology", "--events"]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"] == [
        "nri-cpuset-topology"]
    assert sorted(o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRoleBinding"
                  ) == ["nri-cpuset-events", "nri-cpuset-topology"]
