"""The ValidatingAdmissionPolicy that refuses an invalid ``weka.io/cores-ids`` at the API server
agrees with the plugin's parser on every value of the project's CPU-list corpus, valid and
invalid, in its verdict and in its words (``InvalidAnnotationError``'s message), and on random
values; it applies to pod creation only, leaves pods without the annotation (or with a value
past its size bound) alone, and calls only functions the API server has from 1.30 on.

The CEL runs on cel-python with the Kubernetes library functions in ``tests/support/kube_cel``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_core import DEFAULT_PIN_ANNOTATION, CpuListSyntaxError, CPUSet, InvalidAnnotationError
from tests.support.kube_cel import Verdict, evaluate_policy
from tests.unit.core.cpulist_corpus import ACCEPTED, ANNOTATION_VALUES, REJECTED
from tests.unit.deploy.policies import (
    calls_only_known_functions,
    component,
    functions_called,
    pod,
)

POLICY, BINDING = component("pin-annotation-policy")
CORPUS = sorted({p.values[0] for p in (*ACCEPTED, *REJECTED)} | set(ANNOTATION_VALUES))
SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]



def admission(value: str) -> Verdict:
    return evaluate_policy(POLICY, pod({DEFAULT_PIN_ANNOTATION: value, "team": "a"}))


def plugin(value: str) -> str | None:
    """The plugin's refusal of ``value`` (its error's detail), or ``None`` when it accepts."""
    try:
        CPUSet.parse(value)
    except CpuListSyntaxError as exc:
        return InvalidAnnotationError("ns/web/app", DEFAULT_PIN_ANNOTATION, value, exc).detail
    return None


BOUND = 1024
"""The longest value the policy checks (``within-budget``): longer ones are the node's."""


def short(value: str) -> str:
    return repr(value) if len(value) < 40 else f"{value[:12]!r}... ({len(value)} characters)"


@pytest.mark.parametrize("value", CORPUS, ids=short)
def test_the_policy_and_the_plugin_agree_on_every_value_of_the_corpus(value: str) -> None:
    verdict = admission(value)
    if len(value) > BOUND:
        assert not verdict.matched  # the node refuses it, as before the policy
        return
    assert verdict.matched
    assert verdict.message == plugin(value)
    assert verdict.allowed is (plugin(value) is None)


def test_the_corpus_has_both_kinds_of_value() -> None:
    refused = [v for v in CORPUS if plugin(v) is not None]
    assert len(refused) > 30
    assert len(CORPUS) - len(refused) > 15


def test_the_refusal_reads_as_the_plugins_error() -> None:
    assert admission("0,,1").message == ("annotation weka.io/cores-ids='0,,1' is invalid: "
                                         "empty element at position 2")


@pytest.mark.parametrize("space", SPACES, ids=lambda c: f"U+{ord(c):04X}")
def test_every_whitespace_character_of_the_parser_is_the_policys(space: str) -> None:
    around = f"{space}0-3{space}"
    inside = f"0{space}1"
    assert admission(around).allowed
    assert plugin(around) is None
    assert admission(inside).message == plugin(inside)


NEAR_SPACES = [chr(c) for c in (*range(0x21, 0x7F), 0x1B, 0x7F, 0x84, 0x86, 0x9F, 0xA1,
                                 0x167F, 0x1681, 0x180E, 0x200B, 0x200C, 0x2027, 0x202A,
                                 0x205E, 0x2060, 0x2FFF, 0x3001, 0xFEFF) if not chr(c).isdigit()]
"""Printable ASCII and the neighbours of the whitespace characters (a digit would extend the
list)."""


@pytest.mark.parametrize("char", NEAR_SPACES, ids=lambda c: f"U+{ord(c):04X}")
def test_characters_that_are_not_whitespace_are_refused_around_a_list(char: str) -> None:
    value = f"0-3{char}"
    assert not admission(value).allowed
    assert plugin(value) is not None
    if char.isprintable():
        assert admission(value).message == plugin(value)


values = st.text(alphabet=st.sampled_from([*"0123456789", ",", "-", " ", "\t", "\n", "'",
                                           '"', "\\", "x", ":", "\u00a0", "\u2028", "٣"]),
                 max_size=24)


@settings(max_examples=100, deadline=None)
@given(values)
def test_the_policy_and_the_plugin_agree_on_random_values(value: str) -> None:
    verdict = admission(value)
    assert verdict.allowed is (plugin(value) is None)
    if all(c.isprintable() or c in "\t\n\r" for c in value):
        # repr() shows other unprintable characters escaped; the policy shows them as they
        # are (docs/operations.md): the verdict is the same, the quoted value may differ.
        assert verdict.message == plugin(value)


def test_a_pod_without_the_annotation_is_not_the_policys_business() -> None:
    assert not evaluate_policy(POLICY, pod(None)).matched
    assert not evaluate_policy(POLICY, pod({"team": "a"})).matched


def test_a_value_past_the_size_bound_is_left_to_the_node() -> None:
    long_valid = ",".join(str(n) for n in range(0, 2000, 2))
    assert len(long_valid) > BOUND
    assert not admission(long_valid).matched
    assert not admission(long_valid + ",,").matched  # the node refuses this one
    fits = ",".join(str(n) for n in range(0, 400, 2))
    assert len(fits) < BOUND
    assert admission(fits).allowed


def test_only_pod_creation_is_checked_and_a_failing_expression_lets_the_pod_through() -> None:
    spec = POLICY["spec"]
    assert spec["failurePolicy"] == "Ignore"
    [rule] = spec["matchConstraints"]["resourceRules"]
    assert (rule["apiGroups"], rule["resources"], rule["operations"]) == ([""], ["pods"],
                                                                          ["CREATE"])


def test_the_binding_denies_with_this_policy() -> None:
    assert BINDING["kind"] == "ValidatingAdmissionPolicyBinding"
    assert BINDING["spec"]["policyName"] == POLICY["metadata"]["name"]
    assert BINDING["spec"]["validationActions"] == ["Deny"]


def test_the_policy_calls_only_functions_the_api_server_has() -> None:
    assert calls_only_known_functions(POLICY)
    assert {"split", "find", "indexOf", "substring", "replace"} <= functions_called(POLICY)


def test_each_match_condition_stands_on_its_own() -> None:
    # The API server does not promise an order: a condition must not fail on a pod the other
    # one excludes (an error with no false condition would apply the failure policy).
    for condition in POLICY["spec"]["matchConditions"]:
        alone = {"spec": {"matchConditions": [condition], "validations": [
            {"expression": "true"}]}}
        assert evaluate_policy(alone, pod(None)).matched is (condition["name"] != "pins-cpus")
