"""What the ValidatingAdmissionPolicy tests share: a component's policy and binding, a pod to
admit, and the functions its CEL calls."""

from __future__ import annotations

from typing import Any

import yaml

from tests.support.kube_cel import FUNCTIONS, called_functions
from tests.unit.deploy.schema import KUBERNETES

STANDARD = {"size", "has", "matches", "startsWith", "contains", "int", "string", "exists",
            "filter", "map"}
"""Standard CEL functions and macros a policy may call besides the Kubernetes libraries'."""


def component(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The policy and its binding in ``deploy/kubernetes/components/NAME/policy.yaml``."""
    text = (KUBERNETES / "components" / name / "policy.yaml").read_text()
    policy, binding = (d for d in yaml.safe_load_all(text) if d)
    return policy, binding


def pod(annotations: dict[str, str] | None, *, name: str = "web",
        container: str = "app") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [{"name": container, "image": "busybox"}]}}


def functions_called(policy: dict[str, Any]) -> set[str]:
    """Every function the policy's conditions, variables, validations and messages call."""
    spec = policy["spec"]
    expressions = [c["expression"] for c in spec["matchConditions"]]
    expressions += [v["expression"] for v in spec["variables"]]
    expressions += [f"{v['expression']} {v['messageExpression']}" for v in spec["validations"]]
    return called_functions(expressions)


def calls_only_known_functions(policy: dict[str, Any]) -> bool:
    return functions_called(policy) <= STANDARD | set(FUNCTIONS)
