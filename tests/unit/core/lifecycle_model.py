"""Model-based test of container lifecycles within pods: init containers, sidecars, resizes,
stop-then-remove, pods removed mid-start and CPUs going offline and back.

The model keeps, independently of the engine, which containers are alive (created or running,
not stopped or removed, pod not gone) and the CPUs each pod's stopped integer containers left
that nobody has held since. After every step:

- the ledger's numbered invariants hold (no CPU owned by two integer containers, refcounts
  exact, the shared pool disjoint from pinned and exclusive CPUs, ...);
- the ledger holds exactly the live containers: a running sidecar is never released, a stopped
  container never comes back, and nothing of a removed pod is left;
- the engine's left-behind memory equals the model's;
- an integer container created in a pod whose completed containers left enough free CPUs gets
  its CPUs from those (init → app reuse);
- a stop followed by a remove releases once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    CPUSet,
    CpusetEngine,
    Kind,
    PodFacts,
    Settings,
    Topology,
    violations,
)
from cpuset_core.policy.shared import exclusive_free
from cpuset_lab.machines import DUAL_SOCKET_HT, EPYC_LIKE, THIS_MACHINE_LIKE, build_topology

SHAPES = [THIS_MACHINE_LIKE, DUAL_SOCKET_HT, EPYC_LIKE]
PERIOD = 100_000


@dataclass
class ModelContainer:
    facts: ContainerFacts
    pod: PodFacts
    state: str = "created"  # created → running → stopped → removed


class Lifecycle(RuleBasedStateMachine):
    pods = Bundle("pods")
    containers = Bundle("containers")

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0
        self.model: dict[str, ModelContainer] = {}
        self.removed_pods: set[str] = set()
        self.left: dict[str, CPUSet] = {}
        self.pool_exhausted = False

    @initialize(shape=st.sampled_from(SHAPES), reserve_first=st.booleans())
    def start(self, shape: object, reserve_first: bool) -> None:
        self.full: Topology = build_topology(shape)  # type: ignore[arg-type]
        reserved = CPUSet([self.full.online.first()]) if reserve_first else CPUSet()
        self.settings = Settings(system_reserved=reserved)
        self.engine = CpusetEngine(self.full, self.settings)

    # -- helpers -------------------------------------------------------------------------------

    def _next(self) -> int:
        self.counter += 1
        return self.counter

    def _pod(self, *, guaranteed: bool, annotations: dict[str, str]) -> PodFacts:
        n = self._next()
        parent = f"/kubepods/pod{n}" if guaranteed else f"/kubepods/burstable/pod{n}"
        return PodFacts(sandbox_id=f"s{n}", namespace="ns", name=f"p{n}",
                        annotations=annotations, cgroup_parent=parent)

    def _facts(self, pod: PodFacts, name: str, cpus: float | None) -> ContainerFacts:
        quota = None if cpus is None else int(cpus * PERIOD)
        return ContainerFacts(id=f"c{self._next()}", sandbox_id=pod.sandbox_id, name=name,
                              cpu_quota=quota, cpu_period=None if quota is None else PERIOD)

    def _after_step(self) -> None:
        """Model: CPUs someone holds now are no longer 'left behind' by any pod."""
        reserved = self.engine.ledger.reserved
        self.left = {pod: kept for pod, cpus in self.left.items() if (kept := cpus - reserved)}

    def _create(self, pod: PodFacts, facts: ContainerFacts) -> list[str]:
        ledger = self.engine.ledger
        warm = self.left.get(pod.sandbox_id, CPUSet())
        free = exclusive_free(self.engine.topology, ledger.reserved, self.settings)
        try:
            plan = self.engine.plan_create(pod, facts)
        except AdmissionError:
            assert self.engine.ledger is ledger
            return []
        self.engine.commit(plan)
        placement = plan.placement
        assert placement is not None
        if placement.kind is Kind.INTEGER and len(warm & free) >= len(placement.cpus):
            # The pod's completed containers left enough free CPUs: it lands there.
            assert placement.cpus <= warm, (placement.cpus, warm)
        self.model[facts.id] = ModelContainer(facts, pod)
        self._after_step()
        return [facts.id]

    def _release(self, cid: str) -> None:
        entry = self.engine.ledger.get(cid)
        plan = self.engine.plan_release(cid)
        self.engine.commit(plan)
        if entry is not None and entry.kind is Kind.INTEGER:
            pod = entry.sandbox_id
            self.left[pod] = self.left.get(pod, CPUSet()) | entry.cpus
        self._after_step()

    def _alive(self, cid: str) -> bool:
        item = self.model.get(cid)
        return item is not None and item.state in ("created", "running")

    # -- rules ---------------------------------------------------------------------------------

    @rule(target=pods, guaranteed=st.booleans(), pinned=st.booleans(), data=st.data())
    def new_pod(self, guaranteed: bool, pinned: bool, data: st.DataObject) -> PodFacts:
        annotations = {}
        if pinned:
            cpus = data.draw(st.sets(st.sampled_from(sorted(self.full.known)), min_size=1,
                                     max_size=2))
            annotations["weka.io/cores-ids"] = CPUSet(cpus).format()
        return self._pod(guaranteed=guaranteed, annotations=annotations)

    @rule(target=containers, pod=pods, cpus=st.sampled_from([None, 0.5, 1, 1, 2, 3]),
          name=st.sampled_from(["init", "sidecar", "app"]))
    def create(self, pod: PodFacts, cpus: float | None, name: str) -> object:
        if pod.sandbox_id in self.removed_pods:
            return "gone"  # a name no rule finds in the model: they skip it
        created = self._create(pod, self._facts(pod, name, cpus))
        return created[0] if created else "refused"

    @rule(pod=pods, cpus=st.integers(1, 3), blocked=st.booleans())
    def init_runs_to_completion_then_the_app_reuses_its_cpus(self, pod: PodFacts, cpus: int,
                                                             blocked: bool) -> None:
        """The kubelet's order for one pod. With ``blocked``, another pod holds the
        allocator's first choice while the init container runs and is gone before the app
        container comes, so the app's CPUs differ from a fresh allocation's."""
        if pod.sandbox_id in self.removed_pods:
            return
        blocker: list[str] = []
        if blocked:
            other = self._pod(guaranteed=True, annotations={})
            blocker = self._create(other, self._facts(other, "blocker", cpus))
        init = self._create(pod, self._facts(pod, "init", cpus))
        if not init:
            for cid in blocker:
                self._release(cid)
                self.model[cid].state = "stopped"
            return
        held = self.engine.ledger.entries[init[0]]
        self.model[init[0]].state = "running"
        self._release(init[0])  # it exited: StopContainer
        self.model[init[0]].state = "stopped"
        for cid in blocker:
            self._release(cid)
            self.model[cid].state = "stopped"
        # The pod's memory also holds what its earlier completed containers left; the app
        # gets the best-shaped subset of it all (allocation.md), which _create checks, and
        # which the init's CPUs need not be once the blocker's CPUs are free again. So it
        # gets exactly the init's CPUs when those are all the pod left.
        only_the_init_left = self.left.get(pod.sandbox_id) == held.cpus
        app = self._create(pod, self._facts(pod, "app", cpus))
        if app and held.kind is Kind.INTEGER and only_the_init_left:
            assert self.engine.ledger.entries[app[0]].cpus == held.cpus

    @rule(container=containers)
    def start_container(self, container: str) -> None:
        if self._alive(container):
            self.model[container].state = "running"

    @rule(container=containers)
    def stop(self, container: str) -> None:
        if not self._alive(container):
            return
        self._release(container)
        self.model[container].state = "stopped"

    @rule(container=consumes(containers))
    def remove(self, container: str) -> None:
        item = self.model.get(container)
        if item is None or item.state == "removed":
            return
        ledger = self.engine.ledger
        self._release(container)
        if item.state == "stopped":
            assert self.engine.ledger is ledger, "a remove after a stop released twice"
        item.state = "removed"

    @rule(container=containers, cpus=st.sampled_from([None, 0.5, 1, 2, 3]))
    def resize(self, container: str, cpus: float | None) -> None:
        if not self._alive(container) or container not in self.engine.ledger:
            return
        item = self.model[container]
        quota = None if cpus is None else int(cpus * PERIOD)
        facts = replace(item.facts, cpu_quota=quota, cpu_period=None if quota is None else PERIOD)
        ledger = self.engine.ledger
        try:
            plan = self.engine.plan_resize(item.pod, facts)
        except AdmissionError:
            assert self.engine.ledger is ledger
            return
        self.engine.commit(plan)
        item.facts = facts
        self._after_step()

    @rule(pod=consumes(pods))
    def remove_pod(self, pod: PodFacts) -> None:
        """StopPodSandbox + RemovePodSandbox, possibly while containers are only created."""
        plan = self.engine.plan_release_pod(pod.sandbox_id)
        self.engine.commit(plan)
        self.engine.forget_pod(pod.sandbox_id)
        self.removed_pods.add(pod.sandbox_id)
        for item in self.model.values():
            if item.pod.sandbox_id == pod.sandbox_id:
                item.state = "removed"
        self.left.pop(pod.sandbox_id, None)
        self._after_step()
        assert self.engine.plan_release_pod(pod.sandbox_id).changes_ledger is False

    @rule(data=st.data())
    def cpus_go_offline_or_come_back(self, data: st.DataObject) -> None:
        online = data.draw(st.one_of(
            st.just(self.full.online),
            st.sets(st.sampled_from(sorted(self.full.online)), min_size=1).map(CPUSet)))
        topology = replace(self.full, online=online)
        plan = self.engine.plan_topology_change(topology)
        self.engine.commit(plan)
        assert self.engine.topology.online == online
        assert self.engine.ledger.reserved <= online
        self.pool_exhausted = any(p.reason == "shared-pool-exhausted" for p in plan.problems)
        self._after_step()

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def ledger_invariants_hold(self) -> None:
        if not hasattr(self, "engine"):
            return
        found = violations(self.engine.topology, self.engine.ledger, self.settings)
        if self.pool_exhausted and self.engine.shared_pool():
            self.pool_exhausted = False
        if self.pool_exhausted:
            found = [v for v in found if not v.startswith("7:")]  # reported, not hidden
        assert found == []

    @invariant()
    def the_ledger_holds_exactly_the_live_containers(self) -> None:
        if not hasattr(self, "engine"):
            return
        alive = {cid for cid in self.model if self._alive(cid)}
        assert set(self.engine.ledger.entries) == alive
        for entry in self.engine.ledger.entries.values():
            assert entry.sandbox_id not in self.removed_pods

    @invariant()
    def left_behind_cpus_match_the_model(self) -> None:
        if not hasattr(self, "engine"):
            return
        pods = set(self.left) | {item.pod.sandbox_id for item in self.model.values()}
        for pod in pods:
            assert self.engine.left_behind(pod) == self.left.get(pod, CPUSet()), pod
        for pod in self.removed_pods:
            assert self.engine.left_behind(pod) == CPUSet()
