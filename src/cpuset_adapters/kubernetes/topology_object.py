"""The node's NodeResourceTopology object (``topology.node.k8s.io/v1alpha2``), built from the
engine's state: pure, no I/O, the same inputs always give the same object.

One zone per NUMA node, named ``node-<id>`` and typed ``Node`` (what scheduler-plugins'
``NodeResourceTopologyMatch`` reads), each with ``cpu`` (``policy.headroom``: capacity,
allocatable, available) and ``memory`` (the node's ``MemTotal``: this plugin binds no integer or
shared container's memory to a NUMA node, seed §3.3, so a zone's memory is never used up; the
node's total is the default scheduler's to check), and the SLIT distances as ``costs``.

The top-level attributes say which topology-manager rules the node enforces, in the kubelet's
vocabulary (:data:`POLICIES`):

* ``best-effort`` (the default, what the plugin does): an integer container gets CPUs of one
  NUMA node when one has room and spans the fewest nodes otherwise; it is never refused for a
  NUMA reason. The scheduler then filters nothing on NUMA grounds and only scores.
* ``single-numa-node`` (strict): the scheduler sends a Guaranteed pod only where each container
  fits one node's available CPUs and memory, and leaves it Pending (``cannot align container``)
  otherwise; what the plugin would have spread over several nodes is refused before it is
  scheduled.

When the node itself enforces a strict alignment policy (``[cpus] alignment`` ``restricted`` or
``single-numa-node``), that is what the object declares, whatever the section asks: the
scheduler and the node then agree. The scope is the node's ``[cpus] alignment_scope``
(``container`` by default: the plugin decides each container on its own, decision 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from cpuset_core import CPUSet, Ledger, Settings, Topology
from cpuset_core.policy.headroom import NodeHeadroom, numa_headroom

API_GROUP: Final = "topology.node.k8s.io"
API_VERSION: Final = "v1alpha2"
KIND: Final = "NodeResourceTopology"
PLURAL: Final = "noderesourcetopologies"

POLICIES: Final = ("best-effort", "single-numa-node")
"""The ``topologyManagerPolicy`` values ``topology_publisher.policy`` may ask to declare (see
the module docstring)."""

MANAGED_BY: Final = {"app.kubernetes.io/managed-by": "nri-cpuset"}

JsonObject = dict[str, Any]


def build_topology_object(*, node_name: str, topology: Topology, ledger: Ledger,
                          settings: Settings, draining: CPUSet, memory: Mapping[int, int],
                          policy: str) -> JsonObject:
    """Return the NodeResourceTopology of ``node_name`` for the engine's state (``topology``,
    committed ``ledger``, ``settings``, ``draining`` CPUs) and each NUMA node's memory in
    bytes (a node missing from ``memory`` has none). Raises ``ValueError`` for a ``policy``
    outside :data:`POLICIES`."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    zones = [_zone(node, topology, memory.get(node.node, 0))
             for node in numa_headroom(topology, ledger, settings, draining)]
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": KIND,
        "metadata": {"name": node_name, "labels": dict(MANAGED_BY)},
        "attributes": [{"name": "topologyManagerPolicy",
                        "value": declared_policy(settings, policy)},
                       {"name": "topologyManagerScope",
                        "value": settings.allocation.alignment_scope.value}],
        "zones": zones,
    }


def declared_policy(settings: Settings, asked: str) -> str:
    """What the object declares: the node's strict alignment policy when it enforces one,
    else what ``topology_publisher.policy`` asks (``asked``)."""
    alignment = settings.allocation.alignment
    return alignment.value if alignment.strict else asked


def zone_name(node: int) -> str:
    """The zone of NUMA node ``node``, as the scheduler plugin parses it."""
    return f"node-{node}"


def _zone(node: NodeHeadroom, topology: Topology, memory: int) -> JsonObject:
    zone: JsonObject = {
        "name": zone_name(node.node),
        "type": "Node",
        "resources": [
            _resource("cpu", node.capacity, node.allocatable, node.available),
            _resource("memory", memory, memory, memory),
        ],
    }
    costs = [{"name": zone_name(other), "value": distance}
             for other in topology.numa_nodes
             if (distance := topology.distance(node.node, other)) is not None]
    if costs:
        zone["costs"] = costs
    return zone


def _resource(name: str, capacity: int, allocatable: int, available: int) -> JsonObject:
    return {"name": name, "capacity": capacity, "allocatable": allocatable,
            "available": available}
