"""Reading kubectl-shaped pods: documents, QoS classes, quantities and the kubelet's values."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters.kubelet import cpu_quota, cpu_shares
from cpuset_cli.pod_fields import PodsInputError
from cpuset_cli.pod_quantity import QuantityError, cpu_millis, memory_bytes, parse_quantity
from cpuset_cli.pods import load_pods, parse_pods
from cpuset_core import QoS, Settings, classify, qos_from_cgroup_parent
from tests.builders.kube import container, kube_list, pod

GUARANTEED_2 = {"cpu": "2", "memory": "1Gi"}


# -- documents ---------------------------------------------------------------------------------


def test_a_kubectl_json_list_gives_every_pod_in_order(tmp_path: Path) -> None:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(kube_list(
        pod("web", container("app", {"cpu": "500m"}), namespace="shop", uid="a-1"),
        pod("db", container("pg", GUARANTEED_2, GUARANTEED_2), namespace="shop", uid="b-2"),
    ), indent=2))
    pods = load_pods(path)
    assert [p.ref for p in pods] == ["shop/web", "shop/db"]
    web, db = pods
    assert web.qos is QoS.BURSTABLE
    assert web.facts.cgroup_parent == "/kubepods/burstable/poda-1"
    assert db.qos is QoS.GUARANTEED
    assert db.facts.cgroup_parent == "/kubepods/podb-2"
    assert db.facts.uid == "b-2"
    assert db.containers[0].facts.cpu_quota == 200_000
    assert db.containers[0].facts.cpu_period == 100_000
    assert db.containers[0].facts.cpu_shares == 2048
    assert db.containers[0].facts.memory_limit == 2**30


def test_a_single_pod_in_yaml_with_annotations(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text("""
apiVersion: v1
kind: Pod
metadata:
  name: io
  namespace: storage
  uid: 5d2c
  annotations:
    weka.io/cores-ids: "0-1"
spec:
  containers:
  - name: io
    resources:
      limits: {cpu: 1, memory: 64Mi}
""")
    (spec,) = load_pods(path)
    assert spec.ref == "storage/io"
    assert spec.facts.annotations == {"weka.io/cores-ids": "0-1"}
    assert spec.qos is QoS.GUARANTEED
    assert classify(spec.facts, spec.containers[0].facts, Settings()).kind.value == "annotated"


def test_a_yaml_list_and_several_documents(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text("""kind: List
items:
- kind: Pod
  metadata: {name: a}
  spec: {containers: [{name: c}]}
---
kind: Pod
metadata: {name: b}
spec: {containers: [{name: c}]}
""")
    pods = load_pods(path)
    assert [p.ref for p in pods] == ["default/a", "default/b"]
    assert all(p.qos is QoS.BEST_EFFORT for p in pods)
    assert pods[0].facts.cgroup_parent == "/kubepods/besteffort/poddefault_a"


def test_a_podlist_from_the_api_and_items_without_kind() -> None:
    pods = parse_pods({"kind": "PodList", "items": [{"metadata": {"name": "a"},
                                                     "spec": {"containers": [{"name": "c"}]}}]})
    assert [p.ref for p in pods] == ["default/a"]
    assert parse_pods({"kind": "List", "items": None}) == ()


def test_status_qos_class_wins_over_the_computed_one() -> None:
    (spec,) = parse_pods(pod("p", container("c", {"cpu": "1"}),
                             status={"qosClass": "Guaranteed", "phase": "Running"}))
    assert spec.qos is QoS.GUARANTEED
    assert spec.qos_from_status
    assert qos_from_cgroup_parent(spec.facts.cgroup_parent) is QoS.GUARANTEED


def test_every_cgroup_parent_reads_back_as_its_qos_class() -> None:
    for limits, qos in ((GUARANTEED_2, QoS.GUARANTEED), ({"cpu": "1"}, QoS.BURSTABLE),
                        (None, QoS.BEST_EFFORT)):
        (spec,) = parse_pods(pod("p", container("c", None, limits)))
        assert spec.qos is qos
        assert qos_from_cgroup_parent(spec.facts.cgroup_parent) is qos


# -- the QoS rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(("containers", "init", "expected"), [
    # Limits only: requests default to them.
    ([container("a", None, GUARANTEED_2)], None, QoS.GUARANTEED),
    ([container("a", GUARANTEED_2, GUARANTEED_2)], None, QoS.GUARANTEED),
    # Fractional CPUs are still Guaranteed (the container is shared, the pod Guaranteed).
    ([container("a", None, {"cpu": "1500m", "memory": "1G"})], None, QoS.GUARANTEED),
    # Same value, different spelling.
    ([container("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1000m", "memory": "1024Mi"})],
     None, QoS.GUARANTEED),
    # A request below the limit.
    ([container("a", {"cpu": "1", "memory": "1Gi"}, GUARANTEED_2 | {"memory": "1Gi"})], None,
     QoS.BURSTABLE),
    # A CPU limit but no memory limit.
    ([container("a", None, {"cpu": "2"})], None, QoS.BURSTABLE),
    # One Guaranteed container and one without resources.
    ([container("a", None, GUARANTEED_2), container("b")], None, QoS.BURSTABLE),
    # An init container without limits spoils an otherwise Guaranteed pod.
    ([container("a", None, GUARANTEED_2)], [container("i")], QoS.BURSTABLE),
    # An init container with a request only makes a BestEffort pod Burstable.
    ([container("a")], [container("i", {"memory": "10Mi"})], QoS.BURSTABLE),
    ([container("a", None, GUARANTEED_2)], [container("i", None, GUARANTEED_2)],
     QoS.GUARANTEED),
    ([container("a"), container("b")], [container("i")], QoS.BEST_EFFORT),
    # Zero quantities count as unset; other resources are ignored.
    ([container("a", {"cpu": "0", "memory": "0"}, {"ephemeral-storage": "1Gi"})], None,
     QoS.BEST_EFFORT),
    ([container("a", None, GUARANTEED_2 | {"nvidia.com/gpu": "1"})], None, QoS.GUARANTEED),
])
def test_qos_class_is_computed_like_the_kubelet(containers: list[dict[str, Any]],
                                                init: list[dict[str, Any]] | None,
                                                expected: QoS) -> None:
    (spec,) = parse_pods(pod("p", *containers, init=init))
    assert spec.qos is expected
    assert not spec.qos_from_status


def test_init_containers_come_first_and_sidecars_are_marked() -> None:
    (spec,) = parse_pods(pod("p", container("app"), init=[
        container("setup"), container("proxy", restartPolicy="Always")]))
    assert [(c.name, c.init, c.sidecar) for c in spec.init_containers] == [
        ("setup", True, False), ("proxy", True, True)]
    assert [(c.name, c.init) for c in spec.containers] == [("app", False)]
    assert spec.containers[0].facts.id == "default/p/app"


# -- quantities and the kubelet's conversions --------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    ("500m", Fraction(1, 2)), ("2", Fraction(2)), (2, Fraction(2)), (0.5, Fraction(1, 2)),
    ("1.5", Fraction(3, 2)), ("1.", Fraction(1)), (".5", Fraction(1, 2)), ("+1", Fraction(1)),
    ("64Mi", Fraction(64 * 2**20)), ("1G", Fraction(10**9)), ("1Gi", Fraction(2**30)),
    ("1k", Fraction(1000)), ("1Ki", Fraction(1024)), ("1e3", Fraction(1000)),
    ("1E-3", Fraction(1, 1000)), ("100u", Fraction(1, 10**4)), ("5n", Fraction(5, 10**9)),
    ("0", Fraction(0)), ("2Ei", Fraction(2 * 2**60)),
])
def test_quantities(value: object, expected: Fraction) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(("value", "message"), [
    ("1x", "is not a quantity"), ("", "is not a quantity"), ("1 Gi", "is not a quantity"),
    ("Gi", "is not a quantity"), ("1.5.0", "is not a quantity"), ("1gi", "is not a quantity"),
    ("-1", "is negative"), ("1e99", "out of range"), ("10E", "too large"),
    (True, "expected a quantity"), (None, "expected a quantity"), ([1], "expected a quantity"),
    (float("nan"), "is not a quantity"),
])
def test_bad_quantities(value: object, message: str) -> None:
    with pytest.raises(QuantityError, match=message):
        parse_quantity(value)


def test_rounding_and_the_kubelets_cgroup_values() -> None:
    assert cpu_millis(parse_quantity("0.0001")) == 1  # rounded up, like MilliValue
    assert memory_bytes(parse_quantity("1.5")) == 2
    assert cpu_shares(None) == 2
    assert cpu_shares(0) == 2
    assert cpu_shares(1) == 2
    assert cpu_shares(500) == 512
    assert cpu_shares(2000) == 2048
    assert cpu_shares(10**9) == 262_144
    assert cpu_quota(1500) == 150_000
    assert cpu_quota(1) == 1_000  # the kernel's minimum quota


def test_container_facts_follow_the_kubelet() -> None:
    (spec,) = parse_pods(pod(
        "p",
        container("limited", {"cpu": "250m"}, {"cpu": "1", "memory": "128Mi"}),
        container("request-only", {"cpu": "100m", "memory": "1Mi"}),
        container("nothing"),
    ))
    limited, request_only, nothing = (c.facts for c in spec.containers)
    assert (limited.cpu_shares, limited.cpu_quota, limited.cpu_period,
            limited.memory_limit) == (256, 100_000, 100_000, 128 * 2**20)
    assert (request_only.cpu_shares, request_only.cpu_quota, request_only.cpu_period,
            request_only.memory_limit) == (102, None, None, None)
    assert (nothing.cpu_shares, nothing.cpu_quota) == (2, None)
    assert spec.containers[0].resources.cpu_request == 250
    assert spec.containers[0].resources.memory_request == 128 * 2**20  # defaulted to the limit


# -- bad input names the file, the pod and the field --------------------------------------------


BAD_PODS = [
    ([1], None, None, "expected a List of pods or a Pod"),
    ({"items": []}, None, "kind", "missing"),
    ({"kind": "Deployment"}, None, "kind", "is not a pod shape"),
    ({"kind": "List", "items": {}}, None, "items", "expected a list of pods"),
    (kube_list("pod"), "items[0]", None, "expected a Pod"),
    (kube_list({"kind": "Service", "metadata": {"name": "s"}}), "items[0]", "kind",
     "is not a Pod"),
    (kube_list({"kind": "Pod", "spec": {}}), "items[0]", "metadata.name", "missing"),
    (kube_list(pod("a", container("c")) | {"metadata": {"name": 3}}), "items[0]",
     "metadata.name", "expected a string, got 3"),
    (kube_list(pod("a", container("c"), annotations={"weka.io/cores-ids": 5})),
     "items[0] (pod default/a)", 'metadata.annotations["weka.io/cores-ids"]', "quote it"),
    (kube_list({"kind": "Pod", "metadata": {"name": "a"}, "spec": {}}),
     "items[0] (pod default/a)", "spec.containers", "missing"),
    (kube_list(pod("a")), "items[0] (pod default/a)", "spec.containers", "is empty"),
    (kube_list(pod("a", container("c", None, {"cpu": "1x"}))), "items[0] (pod default/a)",
     "spec.containers[0].resources.limits.cpu", '"1x" is not a quantity'),
    (kube_list(pod("a", container("c"), init=[container("i", {"memory": "-1"})])),
     "items[0] (pod default/a)", "spec.initContainers[0].resources.requests.memory",
     "is negative"),
    (kube_list(pod("a", container("c", {"cpu": "2"}, {"cpu": "1"}))),
     "items[0] (pod default/a)", "spec.containers[0].resources.requests.cpu",
     "request 2 is above the limit 1"),
    (kube_list(pod("a", container("c"), container("c"))), "items[0] (pod default/a)",
     "spec.containers[1].name", "already used by spec.containers[0]"),
    (kube_list(pod("a", {"image": "x"})), "items[0] (pod default/a)",
     "spec.containers[0].name", "missing"),
    (kube_list(pod("a", "c")), "items[0] (pod default/a)", "spec.containers[0]",
     "expected a container"),
    (kube_list(pod("a", container("c") | {"resources": []})), "items[0] (pod default/a)",
     "spec.containers[0].resources", "expected an object"),
    (kube_list(pod("a", container("c"), status={"qosClass": "Gold"})),
     "items[0] (pod default/a)", "status.qosClass", '"Gold" is not one of'),
    (kube_list(pod("a", container("c")), pod("a", container("c"))), "items[1] (pod default/a)",
     "metadata.name", "appears twice (also items[0] (pod default/a))"),
]


@pytest.mark.parametrize(("document", "pod_label", "field", "problem"), BAD_PODS)
def test_bad_pods_name_the_file_pod_and_field(document: object, pod_label: str | None,
                                              field: str | None, problem: str) -> None:
    with pytest.raises(PodsInputError) as caught:
        parse_pods(document, source="pods.json")
    error = caught.value
    assert error.source == "pods.json"
    assert error.pod == pod_label
    assert (error.field or None) == field
    assert problem in error.problem
    assert str(error).startswith("pods.json: ")
    assert "\n" not in str(error)


@pytest.mark.parametrize(("text", "message"), [
    ("{\n  \"kind\": \"List\",\n}", "not JSON: Expecting property name enclosed in double "
                                     "quotes at line 3 column 1"),
    ("kind: List\nitems: [\n", "not YAML:"),
    ("", "is empty"),
    ("# only a comment\n", "is empty"),
])
def test_unreadable_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(text)
    with pytest.raises(PodsInputError, match=message) as caught:
        load_pods(path)
    assert str(caught.value).startswith(str(path))


def test_a_duplicate_pod_across_yaml_documents(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    one = "kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n"
    path.write_text(one + "---\n" + one)
    with pytest.raises(PodsInputError, match="appears twice"):
        load_pods(path)
