"""Pods as the lab's fake API server knows them: the lab tells it of the pods it runs through CRI
(:func:`pod_object`, ``FakeApi.add_pod``), as the real API server knows the pods a kubelet runs,
so that ``kubectl describe pod`` finds them and the events about them (it lists events by the
pod's name, namespace, kind and uid). GET of one pod or of a list, under ``/api/v1``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cpuset_core import QoS
from cpuset_lab.kube_events import Answer, status

if TYPE_CHECKING:  # kube_api, which imports this, stays free of the CRI's protobuf
    from cpuset_lab.pod_spec import PodSpec

_PATH = re.compile(r"/api/v1(?:/namespaces/([^/]+))?/pods(?:/([^/]+))?")

Pods = dict[tuple[str, str], dict[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class PodContainer:
    """A container of a pod's spec: its name, image, and resource requests and limits
    (quantities as Kubernetes writes them: ``{"cpu": "1", "memory": "64Mi"}``)."""

    name: str
    image: str
    requests: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)


def pod_object(spec: PodSpec, *, node: str, qos: QoS, containers: Sequence[PodContainer],
               started: datetime | None = None) -> dict[str, Any]:
    """The v1 Pod the API server would hold for ``spec`` running on ``node``, its containers
    running since ``started`` (now); raises ValueError if ``spec`` has no uid (the events name
    the pod by the uid the runtime was given)."""
    if not spec.uid:
        raise ValueError(f"pod {spec.namespace}/{spec.name} has no uid")
    since = (started or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "uid": spec.uid,
                     "resourceVersion": "1", "creationTimestamp": since,
                     "labels": dict(spec.labels or {}),
                     "annotations": dict(spec.annotations or {})},
        "spec": {"nodeName": node, "hostNetwork": spec.host_network, "restartPolicy": "Always",
                 "containers": [{"name": c.name, "image": c.image,
                                 "resources": {"requests": dict(c.requests),
                                               "limits": dict(c.limits)}}
                                for c in containers]},
        "status": {"phase": "Running", "qosClass": qos.value, "startTime": since,
                   "containerStatuses": [
                       {"name": c.name, "image": c.image, "imageID": "", "ready": True,
                        "restartCount": 0, "started": True,
                        "state": {"running": {"startedAt": since}}} for c in containers]},
    }


def is_pods(path: str) -> bool:
    return _PATH.fullmatch(path.split("?", 1)[0]) is not None


def handle(path: str, pods: Pods) -> Answer:
    """Answer a GET of one pod or a list of pods (the caller holds the lock)."""
    match = _PATH.fullmatch(path.split("?", 1)[0])
    if match is None:
        return 404, status(404, "NotFound", f"no such path {path}")
    namespace, name = match.group(1), match.group(2)
    if name is not None:
        found = pods.get((namespace or "", name))
        if found is None:
            return 404, status(404, "NotFound", f'pods "{name}" not found')
        return 200, found
    items = [pod for (ns, _), pod in sorted(pods.items(), key=lambda item: item[0])
             if namespace is None or ns == namespace]
    return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": ""},
                 "items": items}
