"""The pods a pods file describes: each pod's facts and QoS class, and its containers' facts and
resources (the values ``pods`` reads and ``plan`` places)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from cpuset_core import ContainerFacts, PodFacts, QoS


@dataclass(frozen=True, slots=True)
class Resources:
    """A container's CPU (millicores) and memory (bytes) requests and limits, after defaulting
    (``None``: not set)."""

    cpu_request: int | None = None
    cpu_limit: int | None = None
    memory_request: int | None = None
    memory_limit: int | None = None


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    name: str
    init: bool
    sidecar: bool
    """An init container with ``restartPolicy: Always``: it keeps running."""
    resources: Resources
    facts: ContainerFacts


@dataclass(frozen=True, slots=True)
class PodSpec:
    facts: PodFacts
    qos: QoS
    qos_from_status: bool
    """Whether the class came from ``status.qosClass`` (else it was computed)."""
    init_containers: tuple[ContainerSpec, ...]
    containers: tuple[ContainerSpec, ...]
    label: str
    """How messages name the pod (``items[2] (pod default/web)``)."""

    @property
    def ref(self) -> str:
        return f"{self.facts.namespace}/{self.facts.name}"



def containers_in_order(pod: PodSpec) -> Iterator[ContainerSpec]:
    """Every container of the pod in the order the kubelet starts them."""
    yield from pod.init_containers
    yield from pod.containers
