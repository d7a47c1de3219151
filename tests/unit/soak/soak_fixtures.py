"""Hand-made nodes for the soak's unit tests (``cpuset_soak``)."""

from __future__ import annotations

from cpuset_core import CPUSet
from cpuset_soak.kernel import Enforced
from cpuset_soak.model import Container, Node, Pod

TWO = CPUSet.parse("0-1")
FOUR = CPUSet.parse("0-3")


def node_with(online: CPUSet, *pods: Pod) -> Node:
    node = Node(online=online)
    for pod in pods:
        node.pods[pod.name] = pod
    return node


def pod(name: str, *containers: Container, pin: str | None = None,
        namespace: str = "default") -> Pod:
    made = Pod(name=name, namespace=namespace, qos="Burstable", annotation=pin,
               pin=CPUSet.parse(pin) if pin is not None else None)
    for container in containers:
        container.pod = name
        made.containers[container.name] = container
    return made


def running(kind: str, cid: str, cpus: int = 0, actual: str = "") -> Container:
    return Container(pod="", name=cid, kind=kind, cpus=cpus, cid=cid,
                     actual=CPUSet.parse(actual, allow_empty=True))


def enforced(cpus: str, mems: str = "0") -> Enforced:
    return Enforced(CPUSet.parse(cpus), CPUSet.parse(mems), CPUSet.parse(cpus),
                    CPUSet.parse(mems))
