"""Re-placing every container after CPUs went offline or came back online.

The committed ledger is re-placed on the new topology with the same rules as a synchronize
(``sync.rebuild_live``), except that what each container is comes from its ledger entry instead
of the runtime's report:

* pins keep their online part; a pin naming a CPU that went offline is reported
  (``cpu-unavailable``), and one left with no online CPU runs in the shared pool, reported;
* an integer container keeps its CPUs while all of them are online; one that lost a CPU gets a
  new exclusive set of its size (or runs shared, reported, when none fits);
* the shared pool follows: it shrinks by the CPUs that went away and grows by those that came
  back.

A pin that lost a CPU keeps what its annotation asked (``Entry.pins_asked``) and takes the CPU
back when it returns; one left with no online CPU runs shared until then.
"""

from __future__ import annotations

from dataclasses import replace

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import AdmissionError
from cpuset_core.ledger import Ledger
from cpuset_core.model import ContainerUpdate
from cpuset_core.placing import Live
from cpuset_core.plan import Plan
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.settings import Settings
from cpuset_core.sync import rebuild_live
from cpuset_core.topology import Topology

SOURCE = "topology change"


def replan(topology: Topology, settings: Settings, *, base: Ledger,
           pool_before: CPUSet, reserved_before: CPUSet = EMPTY) -> Plan:
    """Return the plan that re-places every container of ``base`` on ``topology`` (the new
    one); its updates move containers from where they run now (``pool_before`` for shared
    ones, ``reserved_before`` for those on the reserved CPUs) and its ``problems`` list what
    cannot stay as it was. Committing it swaps the engine's topology. Never raises for the
    containers' sake: like a synchronize, it reports.
    """
    allocator = ExclusiveAllocator(topology)
    # Every container "reports" where it runs now, so each one whose set names a CPU that went
    # away gets an update, even where the kernel already dropped the CPU (cgroup v1 does): the
    # runtime's record of the container stops naming it.
    live = [Live.from_entry(base.entries[cid], pool_before, reserved_before)
            for cid in sorted(base.entries)]
    problems: list[AdmissionError] = []
    plan = rebuild_live(topology, settings, allocator, base=base, live=live, problems=problems,
                        source=SOURCE, new_topology=topology)
    return replace(plan, moves=tuple(_online_rollback(u, topology) for u in plan.moves))


def _online_rollback(update: ContainerUpdate, topology: Topology) -> ContainerUpdate:
    """The update with a rollback target the kernel accepts: without the CPUs that went away
    (every online CPU when none of its old ones is left)."""
    previous = update.previous_cpus & topology.online
    if previous == update.previous_cpus:
        return update
    return replace(update, previous_cpus=previous or topology.online)
