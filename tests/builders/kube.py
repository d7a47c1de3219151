"""Pod manifests as ``kubectl get pods -o json`` prints them (plain dicts)."""

from __future__ import annotations

from typing import Any


def container(name: str, requests: dict[str, Any] | None = None,
              limits: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A container spec with the given resource ``requests`` and ``limits`` (and any other
    fields in ``extra``, e.g. ``restartPolicy`` for a sidecar)."""
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources, **extra}


def pod(name: str, *containers: dict[str, Any], namespace: str = "default",
        init: list[dict[str, Any]] | None = None, annotations: dict[str, Any] | None = None,
        status: dict[str, Any] | None = None, uid: str | None = None) -> dict[str, Any]:
    """A pod of ``containers`` (and ``init`` containers); ``uid`` defaults to ``uid-<name>``."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "uid": uid if uid is not None else f"uid-{name}"}
    if annotations is not None:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {"containers": list(containers), "restartPolicy": "Always"}
    if init is not None:
        spec["initContainers"] = init
    document: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                "spec": spec}
    if status is not None:
        document["status"] = status
    return document


def kube_list(*pods: dict[str, Any]) -> dict[str, Any]:
    """The ``List`` kubectl prints around several pods."""
    return {"apiVersion": "v1", "kind": "List", "items": list(pods),
            "metadata": {"resourceVersion": ""}}
