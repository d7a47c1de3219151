"""Model-based: a runtime that drops some live updates and applies others late, a verifier that
reads the kernel and repairs. At every step no CPU has two exclusive owners in the kernel; after
the verifier and the background sends have run, the kernel is what the ledger says.

The runtime double applies a delayed update before the next verifier pass reads: the daemon's
verifier reads only once a burst has settled (0.25 s without a decision), and a runtime that
applies an update at all does so within that time; one it drops, it drops for good.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Literal

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    ContainerUpdate,
    CPUSet,
    CpusetEngine,
    Kind,
    PodFacts,
)
from cpuset_core.verify import Observed
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from cpuset_service.placement import PlacementService
from cpuset_service.verifier import Verifier
from tests.builders.facts import container, pod

TOPOLOGY = build_topology(DUAL_SOCKET_HT)
EXAMPLES = int(os.environ.get("CPUSET_STATEFUL_EXAMPLES", "60"))
Fate = Literal["apply", "drop", "late"]
FATES = st.sampled_from(["apply", "apply", "drop", "late"])
ALL_MEMS = CPUSet(TOPOLOGY.numa_nodes)


class DroppingRuntime(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.service = PlacementService(CpusetEngine(TOPOLOGY, confirm_releases=True))
        self.verifier = Verifier(self.service)
        self.kernel: dict[str, CPUSet] = {}
        self.mems: dict[str, CPUSet] = {}
        self.late: list[ContainerUpdate] = []
        self.pods: dict[str, PodFacts] = {}
        self.facts: dict[str, ContainerFacts] = {}
        self.serial = 0

    # -- the runtime --

    def _deliver(self, updates: list[ContainerUpdate], fates: list[Fate]) -> None:
        for update, fate in zip(updates, fates, strict=False):
            if update.container_id not in self.kernel:
                continue  # gone: nothing to update
            if fate == "apply":
                self._apply(update)
            elif fate == "late":
                self.late.append(update)

    def _admit(self, of: PodFacts, facts: ContainerFacts, data: st.DataObject) -> None:
        facts = dataclasses.replace(facts, cgroups_path=f"/kubepods/{facts.id}")
        try:
            admission = self.service.admit(of, facts)
        except AdmissionError:
            return
        self.pods[facts.id], self.facts[facts.id] = of, facts
        self.kernel[facts.id] = admission.placement.cpus  # the adjustment always applies
        self.mems[facts.id] = admission.placement.mems or ALL_MEMS
        self._deliver(admission.updates,
                      data.draw(st.lists(FATES, min_size=len(admission.updates),
                                         max_size=len(admission.updates))))

    @rule(data=st.data())
    def create_shared(self, data: st.DataObject) -> None:
        self.serial += 1
        of = pod(f"s{self.serial}", qos="burstable")
        self._admit(of, container(f"c{self.serial}", of), data)

    @rule(data=st.data(), cpus=st.integers(1, 4))
    def create_integer(self, data: st.DataObject, cpus: int) -> None:
        self.serial += 1
        of = pod(f"i{self.serial}")
        self._admit(of, container(f"c{self.serial}", of, cpu_limit=cpus), data)

    @rule(data=st.data(), cpus=st.sets(st.integers(0, 15), min_size=1, max_size=3))
    def create_pin(self, data: st.DataObject, cpus: set[int]) -> None:
        self.serial += 1
        of = pod(f"p{self.serial}", qos="burstable", pins=CPUSet(cpus).format())
        self._admit(of, container(f"c{self.serial}", of), data)

    @precondition(lambda self: any(f.cpu_quota for f in self.facts.values()))
    @rule(data=st.data(), cpus=st.integers(1, 6))
    def resize_integer(self, data: st.DataObject, cpus: int) -> None:
        cid = data.draw(st.sampled_from(sorted(c for c, f in self.facts.items() if f.cpu_quota)))
        facts = dataclasses.replace(self.facts[cid], cpu_quota=cpus * 100_000)
        try:
            resized = self.service.resize(self.pods[cid], facts)
        except AdmissionError:
            return
        if resized is None:
            return
        own = ContainerUpdate(container_id=cid, subject="own", kind=resized.placement.kind,
                              cpus=resized.placement.cpus, previous_cpus=self.kernel[cid])
        updates = [*resized.updates, own]
        self._deliver(updates, data.draw(st.lists(FATES, min_size=len(updates),
                                                  max_size=len(updates))))

    @precondition(lambda self: bool(self.facts))
    @rule(data=st.data())
    def stop_and_remove(self, data: st.DataObject) -> None:
        cid = data.draw(st.sampled_from(sorted(self.facts)))
        subject = f"ns/{self.pods[cid].name}/main"
        del self.kernel[cid], self.mems[cid]  # stopped: it runs nowhere
        updates = self.service.stop(cid, subject)
        self._deliver(updates, data.draw(st.lists(FATES, min_size=len(updates),
                                                  max_size=len(updates))))
        self.service.remove(cid, subject)
        del self.facts[cid], self.pods[cid]

    @rule(data=st.data())
    def background_send(self, data: st.DataObject) -> None:
        batch = self.service.pusher.take_batch()
        self._deliver(batch, data.draw(st.lists(FATES, min_size=len(batch),
                                                max_size=len(batch))))

    @rule()
    def verifier_pass(self) -> None:
        self._land_late()
        observed = {cid: Observed(cpus=cpus, mems=self.mems[cid])
                    for cid, cpus in self.kernel.items()}
        self.verifier.verify(observed, read_from=self.service.ledger)

    def _land_late(self) -> None:
        for update in self.late:
            if update.container_id in self.kernel:
                self._apply(update)
        self.late.clear()

    def _apply(self, update: ContainerUpdate) -> None:
        self.kernel[update.container_id] = update.cpus
        if update.mems is not None:
            self.mems[update.container_id] = update.mems

    @rule()
    def settle_then_the_kernel_is_the_ledger(self) -> None:
        """A verifier pass, its re-sends applied, another pass: ledger == kernel."""
        self.verifier_pass()
        for update in self.service.pusher.take_batch():
            self._apply(update)
        self.verifier_pass()
        for cid, cpus in self.kernel.items():
            placement = self.service.placement(cid)
            assert placement is not None
            assert cpus == placement.cpus, (cid, cpus, placement)
        assert self.verifier.drifting() == []

    # -- what must hold at every step --

    @invariant()
    def no_cpu_has_two_exclusive_owners_in_the_kernel(self) -> None:
        entries = self.service.ledger.entries
        owners: dict[int, str] = {}
        for cid, cpus in sorted(self.kernel.items()):
            if cid not in entries or entries[cid].kind is not Kind.INTEGER:
                continue
            for cpu in cpus:
                assert cpu not in owners, f"CPU {cpu}: {owners[cpu]} and {cid}"
                owners[cpu] = cid


DroppingRuntime.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=40,
                                             deadline=None)
TestDroppingRuntime = DroppingRuntime.TestCase
