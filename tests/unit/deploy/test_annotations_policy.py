"""The ValidatingAdmissionPolicy for this project's own annotations (every toggle of
``cpuset_core.workload``: reserved-cpus, shared-cpus, mixed-cpus, isolated-cpus, device-hints,
quiet-irqs, quiet-idle) agrees with the plugin's check (``Requests.of``, ``quiet_of`` then
``hints_wanted``, as ``classify`` reads them) in its verdict and its words, on chosen and
random values, keys and containers; it leaves pods without them alone, applies to pod creation
only, and calls only functions the API server has from 1.30 on.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.devices import hints_wanted
from cpuset_core.errors import AdmissionError
from cpuset_core.quiet_request import quiet_of
from cpuset_core.workload import MIXED, SHARED, TOGGLES, Requests
from tests.support.kube_cel import Verdict, evaluate_policy
from tests.unit.deploy.policies import calls_only_known_functions, component, pod

POLICY, BINDING = component("annotations-policy")


def admission(annotations: dict[str, str], *, init: str | None = None) -> Verdict:
    document: dict[str, Any] = pod({"team": "a", **annotations}, name="db", container="pg")
    if init is not None:
        document["spec"]["initContainers"] = [{"name": init, "image": "busybox"}]
    return evaluate_policy(POLICY, document)


def plugin(annotations: dict[str, str], container: str = "pg") -> str | None:
    """The plugin's refusal of ``container`` (its error's detail) or ``None`` when it
    accepts: the workload requests first, then quiet CPUs, then the device hints, as
    ``classify`` reads them."""
    try:
        Requests.of(annotations, container, "default/db/pg")
        quiet_of(annotations, container, "default/db/pg")
        hints_wanted(annotations, container, "default/db/pg")
    except AdmissionError as exc:
        return exc.detail
    return None


def test_the_policy_names_every_toggle_of_the_plugin() -> None:
    text = str(POLICY["spec"])
    for toggle in TOGGLES:
        assert f"'{toggle.feature}'" in text, toggle.feature


KEYS = [key for toggle in TOGGLES for key in toggle.keys("pg")]
VALUES = ["true", "false", "", "no", "False", "TRUE", " true", "true ", "1", "0", "yes",
          "it's", 'say "no"', "a\\b", "tab\there", "new\nline"]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_the_policy_and_the_plugin_agree_on_each_value(key: str, value: str) -> None:
    verdict = admission({key: value})
    assert verdict.matched
    assert verdict.allowed is (plugin({key: value}) is None)
    assert verdict.message == plugin({key: value})


def test_the_refusal_reads_as_the_plugins_error() -> None:
    assert admission({"device-hints.nri-cpuset.io/pod": "no"}).message == (
        "annotation device-hints.nri-cpuset.io/pod='no' is invalid: expected 'true' or 'false'")


def test_another_containers_bad_value_is_refused_too_as_its_container_would_be() -> None:
    other = {SHARED.container_prefix + "sidecar": "off"}
    assert admission(other).message == plugin(other, container="sidecar")
    assert plugin(other, container="pg") is None  # the node refuses the sidecar, not pg


@pytest.mark.parametrize("annotations", [
    {SHARED.pod_key: "true", MIXED.pod_key: "true"},
    {SHARED.pod_key: "true", MIXED.container_prefix + "pg": "true"},
    {SHARED.container_prefix + "pg": "true", MIXED.pod_key: "true"},
])
def test_shared_and_mixed_both_true_for_a_container_is_refused_in_the_plugins_words(
        annotations: dict[str, str]) -> None:
    verdict = admission(annotations)
    assert verdict.allowed is False
    assert verdict.message == plugin(annotations)
    assert verdict.message is not None
    assert "are both true: exclusive CPUs beside the shared pool" in verdict.message


def test_a_containers_own_key_resolves_a_pod_level_conflict_away() -> None:
    annotations = {SHARED.pod_key: "true", MIXED.pod_key: "true",
                   MIXED.container_prefix + "pg": "false"}
    assert plugin(annotations) is None
    assert admission(annotations).allowed is True


def test_an_init_containers_conflict_is_refused_as_the_node_would_refuse_it() -> None:
    annotations = {SHARED.pod_key: "true", MIXED.container_prefix + "setup": "true"}
    assert plugin(annotations) is None  # pg resolves mixed to nothing
    verdict = admission(annotations, init="setup")
    assert verdict.allowed is False
    assert verdict.message == plugin(annotations, container="setup")


def test_keys_the_node_never_reads_are_left_alone() -> None:
    assert not admission({"shared-cpus.nri-cpuset.io/container.": "x"}).matched
    assert not admission({"cpus.nri-cpuset.io/pod": "x"}).matched


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(
    st.sampled_from([*KEYS, *(t.container_prefix + "side" for t in TOGGLES)]),
    st.sampled_from(["true", "false", "yes", ""]), max_size=4))
def test_the_policy_refuses_a_pod_exactly_when_the_plugin_refuses_one_of_its_containers(
        annotations: dict[str, str]) -> None:
    document = pod({"team": "a", **annotations}, name="db", container="pg")
    document["spec"]["containers"].append({"name": "side", "image": "busybox"})
    verdict = evaluate_policy(POLICY, document)
    refusals = [r for r in (plugin(annotations, "pg"), plugin(annotations, "side")) if r]
    assert verdict.allowed is (not refusals)
    # The words are compared when the pod has one problem: with two (a value neither true nor
    # false, and a conflict among the valid ones), each side may name either one first.
    invalid = {k for k, v in annotations.items() if v not in ("true", "false")}
    valid = {k: v for k, v in annotations.items() if k not in invalid}
    one_problem = not invalid or (len(invalid) == 1 and not any(
        plugin(valid, container) for container in ("pg", "side")))
    if len(set(refusals)) == 1 and one_problem:
        assert verdict.message == refusals[0]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(KEYS), st.text(alphabet=st.sampled_from([*"truefalsTRUE", " ", "'", '"',
                                                                  "\\", "\t", "x"]),
                                      max_size=8))
def test_the_policy_and_the_plugin_agree_on_random_values(key: str, value: str) -> None:
    verdict = admission({key: value})
    assert verdict.allowed is (plugin({key: value}) is None)
    assert verdict.message == plugin({key: value})


def test_pods_without_these_annotations_are_not_the_policys_business() -> None:
    assert not evaluate_policy(POLICY, pod(None, name="db", container="pg")).matched
    assert not evaluate_policy(POLICY, pod({"team": "a"}, name="db", container="pg")).matched
    assert not admission({"device-hints.nri-cpuset.io/other": "x"}).matched


def test_only_pod_creation_is_checked_and_a_failing_expression_lets_the_pod_through() -> None:
    spec = POLICY["spec"]
    assert spec["failurePolicy"] == "Ignore"
    [rule] = spec["matchConstraints"]["resourceRules"]
    assert (rule["apiGroups"], rule["resources"], rule["operations"]) == ([""], ["pods"],
                                                                          ["CREATE"])


def test_the_binding_denies_with_this_policy() -> None:
    assert BINDING["spec"]["policyName"] == POLICY["metadata"]["name"]
    assert BINDING["spec"]["validationActions"] == ["Deny"]


def test_the_policy_calls_only_functions_the_api_server_has() -> None:
    assert calls_only_known_functions(POLICY)


def test_a_pod_with_an_invalid_value_and_a_conflict_is_refused_by_both() -> None:
    """Found by the property above: both refuse, each naming one of the two problems first."""
    annotations = {SHARED.container_prefix + "pg": "true", MIXED.container_prefix + "pg": "true",
                   "device-hints.nri-cpuset.io/container.pg": "yes"}
    assert plugin(annotations) is not None
    assert admission(annotations).allowed is False
