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

A pin that lost a CPU does not take it back when the CPU returns: the ledger keeps the CPUs a
pin holds, not the annotation's text. The next synchronize (which reads the annotation again)
restores it.
"""

from __future__ import annotations

from cpuset_core.classify import Classification
from cpuset_core.cpuset import CPUSet
from cpuset_core.errors import AdmissionError
from cpuset_core.ledger import Entry, Ledger
from cpuset_core.model import ContainerFacts, Kind
from cpuset_core.plan import Plan
from cpuset_core.policy.exclusive import ExclusiveAllocator
from cpuset_core.settings import Settings
from cpuset_core.sync import Live, rebuild_live
from cpuset_core.topology import Topology

SOURCE = "topology change"


def replan(topology: Topology, settings: Settings, *, base: Ledger,
           pool_before: CPUSet) -> Plan:
    """Return the plan that re-places every container of ``base`` on ``topology`` (the new
    one); its updates move containers from where they run now (``pool_before`` for shared
    ones) and its ``problems`` list what cannot stay as it was. Committing it swaps the
    engine's topology. Never raises for the containers' sake: like a synchronize, it reports.
    """
    allocator = ExclusiveAllocator(topology)
    live = [_live(base.entries[cid], pool_before, topology.online)
            for cid in sorted(base.entries)]
    problems: list[AdmissionError] = []
    return rebuild_live(topology, settings, allocator, base=base, live=live, problems=problems,
                        source=SOURCE, new_topology=topology)


def _live(entry: Entry, pool_before: CPUSet, online: CPUSet) -> Live:
    """The entry as a live container: it "reports" where it runs now, minus CPUs that are no
    longer online (the kernel has taken them away already), so a rollback never names one."""
    running = pool_before if entry.kind is Kind.SHARED else entry.cpus
    now = running & online
    facts = ContainerFacts(id=entry.container_id, sandbox_id=entry.sandbox_id,
                           name=entry.subject.rpartition("/")[2], cpus=now.format(),
                           mems="" if entry.mems is None else entry.mems.format())
    if entry.kind is Kind.ANNOTATED:
        decision = Classification(kind=Kind.ANNOTATED, pins=entry.cpus, reason=entry.reason)
    elif entry.kind is Kind.INTEGER:
        decision = Classification(kind=Kind.INTEGER, request=entry.request, reason=entry.reason)
    else:
        decision = Classification(kind=Kind.SHARED, reason=entry.reason)
    return Live(facts, None, entry.subject, decision)
