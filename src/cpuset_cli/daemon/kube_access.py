"""Which node the plugin runs on and how it reaches the API server: ``[topology_publisher]``'s
``node_name`` (else ``$NODE_NAME``) and ``kubeconfig`` (else the pod's service account), shared
by the topology publisher and the events."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from cpuset_adapters.config import TopologyPublisher as TopologyPublisherSettings
from cpuset_adapters.kubernetes.credentials import (
    CredentialsError,
    Endpoint,
    from_kubeconfig,
    in_cluster,
)


def node_and_endpoint(settings: TopologyPublisherSettings, environ: Mapping[str, str], *,
                      feature: str, log: logging.Logger) -> tuple[str, Endpoint] | None:
    """The node's name and the API server's endpoint, or ``None`` when either is missing
    (``feature`` is then logged as not started, and why: the plugin pins containers all the
    same)."""
    node_name = settings.node_name or environ.get("NODE_NAME", "")
    if not node_name:
        log.error("%s not started: no node name (set NODE_NAME from the downward API, or "
                  "topology_publisher.node_name)", feature)
        return None
    try:
        endpoint = (from_kubeconfig(settings.kubeconfig) if settings.kubeconfig
                    else in_cluster(environ))
    except CredentialsError as exc:
        log.error("%s not started: %s", feature, exc)
        return None
    return node_name, endpoint
