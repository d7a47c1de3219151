"""The ValidatingAdmissionPolicy for this project's own annotations (the device-hints ones)
agrees with the plugin's check (``cpuset_core.devices.hints_wanted``) in its verdict and its
words, on chosen and random values and keys; it leaves pods without them alone, applies to pod
creation only, and calls only functions the API server has from 1.30 on.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core.devices import HINTS_CONTAINER_PREFIX, HINTS_POD, hints_wanted
from cpuset_core.errors import AnnotationValueError
from tests.support.kube_cel import Verdict, evaluate_policy
from tests.unit.deploy.policies import calls_only_known_functions, component, pod

POLICY, BINDING = component("annotations-policy")


def admission(annotations: dict[str, str]) -> Verdict:
    return evaluate_policy(POLICY, pod({"team": "a", **annotations}, name="db", container="pg"))


def plugin(annotations: dict[str, str], container: str = "pg") -> str | None:
    """The plugin's refusal (its error's detail) or ``None`` when it accepts."""
    try:
        hints_wanted(annotations, container, "default/db/pg")
    except AnnotationValueError as exc:
        return exc.detail
    return None


KEYS = [HINTS_POD, HINTS_CONTAINER_PREFIX + "pg"]
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
    assert admission({HINTS_POD: "no"}).message == (
        "annotation device-hints.nri-cpuset.io/pod='no' is invalid: expected 'true' or 'false'")


def test_another_containers_bad_value_is_refused_too_as_its_container_would_be() -> None:
    other = {HINTS_CONTAINER_PREFIX + "sidecar": "off"}
    assert admission(other).message == plugin(other, container="sidecar")
    assert plugin(other, container="pg") is None  # the node refuses the sidecar, not pg


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
