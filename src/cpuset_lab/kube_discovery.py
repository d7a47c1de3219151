"""API discovery for the lab's fake API server: what kubectl reads before any request
(``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>/<version>``), in the legacy (unaggregated)
form. kubectl v1.32 asks for aggregated discovery first (``apidiscovery.k8s.io/v2``) with plain
``application/json`` as its last choice, and reads an ``application/json`` answer as the legacy
form, as it does from a server without aggregated discovery.

The fake serves pods and events (core/v1), events (events.k8s.io/v1) and NodeResourceTopologies
(topology.node.k8s.io/v1alpha2, cluster-scoped).
"""

from __future__ import annotations

from typing import Any

_READ = ["get", "list"]
_WRITE = ["create", "get", "list", "patch"]

_RESOURCES: dict[str, list[dict[str, Any]]] = {
    "v1": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": _READ, "shortNames": ["po"], "categories": ["all"]},
        {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event",
         "verbs": _READ, "shortNames": ["ev"]},
    ],
    "events.k8s.io/v1": [
        {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event",
         "verbs": _WRITE, "shortNames": ["ev"]},
    ],
    "topology.node.k8s.io/v1alpha2": [
        {"name": "noderesourcetopologies", "singularName": "noderesourcetopology",
         "namespaced": False, "kind": "NodeResourceTopology", "verbs": _WRITE,
         "shortNames": ["node-res-topo"]},
    ],
}


def document(path: str) -> dict[str, Any] | None:
    """The discovery document at ``path`` (its query ignored), or None if it is not one."""
    route = path.split("?", 1)[0].rstrip("/")
    if route == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if route == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            _group(version) for version in _RESOURCES if "/" in version]}
    version = "v1" if route == "/api/v1" else route.removeprefix("/apis/")
    if (route == "/api/v1" or "/" in version) and version in _RESOURCES:
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": version,
                "resources": _RESOURCES[version]}
    return None


def _group(group_version: str) -> dict[str, Any]:
    name, version = group_version.split("/")
    entry = {"groupVersion": group_version, "version": version}
    return {"name": name, "versions": [entry], "preferredVersion": entry}
