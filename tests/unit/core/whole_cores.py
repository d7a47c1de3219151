"""What the allocation option tests share: the whole-physical-cores option, and the check that
an allocation splits no core.
"""

from __future__ import annotations

from cpuset_core.cpuset import CPUSet
from cpuset_core.policy.exclusive import AllocationOptions
from cpuset_core.topology import Topology

WHOLE = AllocationOptions(full_physical_cores=True)


def splits_no_core(topology: Topology, taken: CPUSet) -> bool:
    return all((core & topology.online) <= taken for core in topology.cores_within(taken))
