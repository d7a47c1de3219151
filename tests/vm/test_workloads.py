"""A mixed container (``mixed-cpus.nri-cpuset.io``, issue 32) on the guest's kernel: a 2500m
Guaranteed container gets two exclusive CPUs and the shared pool, and its cgroup follows the
pool live as an integer container takes CPUs from it and gives them back, without ever
overlapping that container's CPUs. (The e2e machine has two CPUs: too few for a pool that
changes under a mixed container.)"""

from __future__ import annotations

from cpuset_core.cpuset import CPUSet
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import container_resources
from tests.vm import kernel
from tests.vm.runtime import Guest, Pods, wait_consistent

MIXED = {"mixed-cpus.nri-cpuset.io/pod": "true"}


def test_a_mixed_container_keeps_its_exclusive_cpus_and_follows_the_shared_pool(
        guest: Guest, pods: Pods) -> None:
    mixed = pods.container(pods.pod("mixed", QosClass.GUARANTEED, annotations=MIXED), "app",
                           container_resources(cpu_request="2500m", cpu_limit="2500m",
                                               memory_limit="64Mi"))
    wait_consistent(guest)
    state = guest.state()
    [entry] = [c for c in state["containers"] if c["id"] == mixed]
    assert entry["kind"] == "mixed", entry
    pool = CPUSet.parse(state["shared_pool"])
    own = kernel.placement(guest.cri, mixed).cpus - pool
    assert len(own) == 2, (own, pool)
    assert kernel.placement(guest.cri, mixed).cpus == kernel.online()  # its own and the pool
    assert kernel.placement(guest.cri, guest.web).cpus == pool  # its own left the pool

    db = pods.integer("db", 2)
    wait_consistent(guest)
    taken = kernel.placement(guest.cri, db).cpus
    after = kernel.placement(guest.cri, mixed)
    assert after.cpus == kernel.online() - taken, after  # the pool shrank under it, live
    assert own <= after.cpus

    guest.cri.stop(db)
    guest.cri.remove(db)
    wait_consistent(guest)
    assert kernel.placement(guest.cri, mixed).cpus == kernel.online()  # and grew back
