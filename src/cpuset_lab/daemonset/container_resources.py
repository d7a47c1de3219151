"""The container's ``resources`` as the kubelet turns them into CRI
``LinuxContainerResources``, the pod's QoS class they make, and the container's OOM score."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Final

from cpuset_adapters import kubelet
from cpuset_adapters.cri.proto import cri_pb2 as pb
from cpuset_cli.pod_qos import Quantities, compute_qos
from cpuset_cli.pod_quantity import parse_quantity
from cpuset_core import QoS
from cpuset_lab.daemonset.manifest import FieldReader
from cpuset_lab.resources import memory_bytes, milli_cpus

NODE_CRITICAL_CLASS: Final = "system-node-critical"
"""The priority class that makes a pod node-critical to the kubelet (its OOM score below)."""
CRITICAL_OOM_SCORE_ADJ: Final = -997
"""The kubelet's oom_score_adj for a node-critical pod's (and a Guaranteed pod's) containers."""
BEST_EFFORT_OOM_SCORE_ADJ: Final = 1000

_RESOURCE_NAMES: Final = {"cpu", "memory"}


def _quantities(reader: FieldReader, value: object, path: str) -> dict[str, str]:
    found = reader.fields(value, path, _RESOURCE_NAMES)
    return {k: str(v) for k, v in found.items()}


def linux_resources(reader: FieldReader, value: object,
                    path: str) -> tuple[pb.LinuxContainerResources, QoS]:
    """``LinuxContainerResources`` as the kubelet computes them, and the pod's QoS class.

    The API server copies a limit into a missing request, so that is done here too. Shares come
    from the CPU request; quota and period are only sent with a CPU limit (no limit: both 0,
    "not specified"); the memory limit goes as is.
    """
    fields = reader.fields(value, path, {"requests", "limits"})
    limits = _quantities(reader, fields.get("limits", {}), f"{path}.limits")
    requests = {**limits, **_quantities(reader, fields.get("requests", {}), f"{path}.requests")}
    out = pb.LinuxContainerResources(
        cpu_shares=kubelet.cpu_shares(milli_cpus(requests["cpu"]) if "cpu" in requests else None))
    if "cpu" in limits and (milli := milli_cpus(limits["cpu"])):
        out.cpu_period = kubelet.CFS_PERIOD
        out.cpu_quota = kubelet.cpu_quota(milli, kubelet.CFS_PERIOD)
    if "memory" in limits:
        out.memory_limit_in_bytes = memory_bytes(limits["memory"])
    return out, _qos(requests, limits)


def _qos(requests: Mapping[str, str], limits: Mapping[str, str]) -> QoS:
    """The kubelet's QoS class of a one-container pod (:func:`cpuset_cli.pod_qos.compute_qos`)."""
    def exact(quantities: Mapping[str, str]) -> dict[str, Fraction]:
        return {name: parse_quantity(value) for name, value in quantities.items()}

    return compute_qos([Quantities(exact(requests), exact(limits))])


def oom_score_adj(qos: QoS, *, critical: bool) -> int:
    """The kubelet's container oom_score_adj, where it needs no node facts: -997 for a
    system-node-critical or a Guaranteed pod, 1000 for BestEffort. A Burstable container's score
    depends on the node's memory capacity, which the lab does not pass: 0, not sent."""
    if critical or qos is QoS.GUARANTEED:
        return CRITICAL_OOM_SCORE_ADJ
    return BEST_EFFORT_OOM_SCORE_ADJ if qos is QoS.BEST_EFFORT else 0
