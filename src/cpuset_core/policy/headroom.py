"""What each NUMA node can still give one integer container, as the engine would decide it now:
the per-node numbers a topology-aware scheduler needs to see the machine as the plugin does.

Per NUMA node, counted in CPUs:

* **capacity**: its online CPUs;
* **allocatable**: capacity without the system-reserved CPUs (where system pods run,
  ``reserved_namespaces``: never a workload's) and, unless ``exclusive_on_isolated``, the
  isolated ones: what an integer container could ever get there;
* **available**: allocatable without the pinned, exclusive and draining CPUs, and without what
  the shared pool must keep. The planner refuses a change that shrinks the pool below
  ``min_shared_pool``, or empties it while containers run on it (shared and mixed ones, and
  those asking for the reserved CPUs while none is online: ``planner._finish``), so only
  the pool's CPUs above that floor can be taken; with ``full_physical_cores`` only wholly free
  cores count.

Each node's ``available`` is what one integer container confined to that node could be given:
the nodes are not additive, because they share one floor. It can overstate only where the
allocator could take isolated CPUs outside the pool (``exclusive_on_isolated``) and picks pool
CPUs instead while the floor binds.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.ledger import Ledger
from cpuset_core.policy.shared import exclusive_free, reserved_pool, shared_pool
from cpuset_core.settings import Settings
from cpuset_core.topology import Topology


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeHeadroom:
    """One NUMA node's CPUs as a scheduler should count them (see the module docstring)."""

    node: int
    capacity: int
    allocatable: int
    available: int


def pool_floor(settings: Settings, shared_containers: int) -> int:
    """How many CPUs the shared pool must keep: ``min_shared_pool``, and at least one while
    shared containers run (the planner's two refusals)."""
    return max(settings.min_shared_pool, 1 if shared_containers else 0)


def numa_headroom(topology: Topology, ledger: Ledger, settings: Settings,
                  draining: CPUSet = EMPTY) -> tuple[NodeHeadroom, ...]:
    """Return every NUMA node's capacity, allocatable and available CPUs, in node order, for
    the committed ``ledger`` (``draining``: CPUs running containers gave up and may still run
    on, ``CpusetEngine.draining``)."""
    pool = shared_pool(topology, ledger.reserved, settings)
    free = exclusive_free(topology, ledger.reserved, settings) - draining
    ever = exclusive_free(topology, EMPTY, settings)
    users = ledger.on_pool(reserved_pool(topology, settings))
    spare = max(0, len(pool) - pool_floor(settings, len(users)))
    whole = settings.allocation.full_physical_cores
    nodes = []
    for node in topology.numa_nodes:
        cpus = topology.cpus_of_numa(node)
        here = free & cpus
        available = (_whole_cores(topology, here, pool, spare) if whole
                     else len(here - pool) + min(len(here & pool), spare))
        nodes.append(NodeHeadroom(node=node, capacity=len(cpus & topology.online),
                                  allocatable=len(ever & cpus), available=available))
    return tuple(nodes)


def _whole_cores(topology: Topology, free: CPUSet, pool: CPUSet, spare: int) -> int:
    """CPUs of the wholly free cores in ``free`` that can be taken without taking more than
    ``spare`` CPUs from the pool (cheapest cores first: most cores for the budget)."""
    cores = [core & topology.online for core in topology.cores_within(free)]
    taken = 0
    for core in sorted((c for c in cores if c.issubset(free)), key=lambda c: len(c & pool)):
        cost = len(core & pool)
        if cost > spare:
            break  # sorted by cost: every later core costs at least as much
        spare -= cost
        taken += len(core)
    return taken
