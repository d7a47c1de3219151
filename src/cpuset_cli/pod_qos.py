"""A pod's QoS class computed like the kubelet (``ComputePodQOS``), from its containers' ``cpu``
and ``memory`` requests and limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from cpuset_core import QoS

CPU: Final = "cpu"
MEMORY: Final = "memory"
QOS_RESOURCES: Final = (CPU, MEMORY)


@dataclass(frozen=True, slots=True)
class Quantities:
    """One container's ``cpu``/``memory`` requests and limits as exact values, defaulted."""

    requests: Mapping[str, Fraction]
    limits: Mapping[str, Fraction]


def compute_qos(containers: Sequence[Quantities]) -> QoS:
    """The kubelet's ``ComputePodQOS`` over every container (init containers included)."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for container in containers:
        for name, quantity in container.requests.items():
            if quantity > 0:
                requests[name] = requests.get(name, Fraction(0)) + quantity
        found: set[str] = set()
        for name, quantity in container.limits.items():
            if quantity > 0:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + quantity
        if not found.issuperset(QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QoS.BEST_EFFORT
    if guaranteed and any(limits.get(name) != value for name, value in requests.items()):
        guaranteed = False
    if guaranteed and len(requests) == len(limits):
        return QoS.GUARANTEED
    return QoS.BURSTABLE

