"""The workload requests the soak walks (docs/operations.md "Workload annotations"), each a
*shape* of pod: what the kubelet asks for it (QoS, resources), the annotations it carries, and
the kind the model gives it once admitted — the plugin's documented rules, written again here:

* ``opted-out``: a Guaranteed container of whole CPUs with ``shared-cpus`` runs on the pool;
* ``mixed``: a Guaranteed container of ``N.5`` CPUs with ``mixed-cpus`` holds N exclusive CPUs
  and runs on the pool beside them;
* ``system``: a kube-system pod (Burstable, or Guaranteed with whole CPUs) runs on the reserved
  CPUs while some are reserved (``cpus.reserved_namespaces`` unset), else by its QoS;
* ``reserved-request``: a Burstable pod with ``reserved-cpus`` the same, from a namespace that
  may pin; none reserved: on the pool (``unmet_requests`` best effort);
* ``isolated-request``: a Guaranteed container with ``isolated-cpus``, from a namespace that may
  pin: the soak's machines isolate no CPU, so it is an integer container (best effort);
* ``quiet-request``: a pod asking for quiet CPUs (``quiet``): Guaranteed, an integer container
  whose CPUs the plugin quiets; Burstable now and then, a shared one whose request is ignored;
  a value the plugin does not understand is refused before anything else.

A gated request (``reserved-cpus``, ``isolated-cpus``, quiet CPUs) from a namespace that may
not pin is refused like a pin."""

from __future__ import annotations

from typing import Final

from cpuset_adapters.cri.results import Resources
from cpuset_lab.resources import container_resources, guaranteed

from . import quiet
from .model import EXCLUSIVE, INTEGER, MIXED, RESERVED, SHARED, Node, Pod
from .prediction import ADMIT, NAMESPACE, Prediction, refuse

OPTED_OUT: Final = "opted-out"
MIXED_REQUEST: Final = "mixed"
SYSTEM: Final = "system"
RESERVED_REQUEST: Final = "reserved-request"
ISOLATED_REQUEST: Final = "isolated-request"
QUIET_REQUEST: Final = "quiet-request"
SHAPES: Final = (OPTED_OUT, MIXED_REQUEST, SYSTEM, RESERVED_REQUEST, ISOLATED_REQUEST,
                 QUIET_REQUEST)

DOMAIN: Final = "nri-cpuset.io"
GATED: Final = frozenset({RESERVED_REQUEST, ISOLATED_REQUEST, QUIET_REQUEST})
"""Requests that take CPUs from everyone else: only namespaces that may pin may ask."""
SYSTEM_NAMESPACE: Final = "kube-system"


def annotations_of(shape: str, *, per_container: bool) -> dict[str, str]:
    """The pod annotations of ``shape``: for every container of the pod, or (``per_container``)
    for its ``app`` container alone."""
    request = {OPTED_OUT: "shared-cpus", MIXED_REQUEST: "mixed-cpus",
               RESERVED_REQUEST: "reserved-cpus", ISOLATED_REQUEST: "isolated-cpus"}.get(shape)
    if request is None:
        return {}
    scope = "container.app" if per_container else "pod"
    return {f"{request}.{DOMAIN}/{scope}": "true"}


def qos(shape: str, cpus: int) -> str:
    if shape == RESERVED_REQUEST or (shape in (SYSTEM, QUIET_REQUEST) and not cpus):
        return "Burstable"
    return "Guaranteed"


def resources(shape: str, cpus: int) -> Resources:
    """What the kubelet gives the container of ``shape`` asking ``cpus`` (whole CPUs; a mixed
    one asks half a CPU more)."""
    if qos(shape, cpus) == "Burstable":
        return container_resources(cpu_request="100m")
    if shape == MIXED_REQUEST:
        return guaranteed(f"{cpus * 1000 + 500}m", "64Mi")
    return guaranteed(cpus, "64Mi")


def kind_of(node: Node, shape: str, cpus: int) -> str:
    """The model's kind for a container of ``shape`` admitted now."""
    if shape == OPTED_OUT:
        return SHARED
    if shape == MIXED_REQUEST:
        return MIXED
    if shape in (SYSTEM, RESERVED_REQUEST) and node.reserved_pool():
        return RESERVED
    if shape == RESERVED_REQUEST:
        return SHARED
    return INTEGER if cpus else SHARED


def exclusive(kind: str, cpus: int) -> int:
    """The exclusive CPUs the model counts for a container of ``kind`` asking ``cpus`` (its
    ``Container.cpus``)."""
    return cpus if kind in EXCLUSIVE else 0


def predict(node: Node, pod: Pod, shape: str, cpus: int) -> Prediction:
    """What the plugin may answer to a container of ``shape`` in ``pod``."""
    if shape == QUIET_REQUEST and (reason := quiet.refusal(pod.requests)) is not None:
        return refuse(reason)  # read when the container is classified, before any gate
    asks = shape != QUIET_REQUEST or quiet.asked(pod.requests).anything
    if shape in GATED and asks and not node.allowed(pod.namespace):
        return refuse(NAMESPACE)
    kind = kind_of(node, shape, cpus)
    if kind == RESERVED:
        return ADMIT
    if kind == MIXED:
        return node.predict_integer(cpus, on_pool=True)
    if kind == INTEGER:
        return node.predict_integer(cpus)
    return node.predict_shared()

