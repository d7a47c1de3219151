"""Model-based test: random lifecycles against the engine, the fake runtime and injected failures.

After every step:
- the ledger's numbered invariants hold (no CPU with two exclusive owners, exact refcounts,
  shared pool disjoint from reserved CPUs and never empty while shared containers exist, ...);
- every managed container's live cpuset equals what the ledger says (except containers whose
  best-effort release update failed, until the next synchronize corrects them);
- no shared container runs on a reserved CPU and no two integer containers share a CPU, drifted
  or not (safety never depends on an update having succeeded);
- a rejected or failed step left the ledger and every container exactly as they were.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    multiple,
    rule,
)

from cpuset_adapters.dry_run import DryRunHost, DryRunRuntime
from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    CPUSet,
    CpusetEngine,
    DeviceLocality,
    Kind,
    PodFacts,
    Settings,
    SharedPoolExhaustedError,
    Toggle,
    Unmet,
    UpdateTransactionError,
)
from cpuset_core.policy.alignment import misalignment
from cpuset_core.policy.shared import exclusive_free
from cpuset_core.workload import ISOLATED, MIXED, RESERVED, SHARED
from cpuset_lab.machines import (
    DUAL_SOCKET_HT,
    EPYC_LIKE,
    OFFLINE_ISOLATED,
    THIS_MACHINE_LIKE,
    build_topology,
)
from tests.unit.core.engine_lifecycle_checks import LifecycleChecks
from tests.unit.core.option_strategies import allocation_options

SHAPES = [THIS_MACHINE_LIKE, DUAL_SOCKET_HT, EPYC_LIKE, OFFLINE_ISOLATED]
PERIOD = 100_000


class EngineLifecycle(LifecycleChecks, RuleBasedStateMachine):
    containers = Bundle("containers")

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0
        self.unmanaged: set[str] = set()
        self.pool_exhausted_at_sync = False

    @initialize(shape=st.sampled_from(SHAPES), reserve_first=st.booleans(),
                strict=st.booleans(), min_pool=st.sampled_from([0, 0, 2, 6]),
                options=st.fixed_dictionaries({
                    "exclusive_on_isolated": st.booleans(),
                    # Every option, including any added later: drawn from its type.
                    "allocation": allocation_options(),
                    "pin_namespaces": st.sampled_from([("*",), ("n*",), ("weka",)]),
                    "reserved_namespaces": st.sampled_from([(), ("kube-*",)]),
                    "unmet_requests": st.sampled_from(Unmet),
                }))
    def start(self, shape: object, reserve_first: bool, strict: bool, min_pool: int,
              options: dict[str, Any]) -> None:
        topology = build_topology(shape)  # type: ignore[arg-type]
        reserved = CPUSet([topology.online.first()]) if reserve_first else CPUSet()
        self.settings = Settings(system_reserved=reserved, strict_reservation=strict,
                                 min_shared_pool=min_pool, **options)
        self.topology = topology
        self.engine = CpusetEngine(topology, self.settings)
        self.host = DryRunHost(topology)
        self.runtime = DryRunRuntime(self.host, self.engine)

    # -- helpers -------------------------------------------------------------------------------

    def _new_pod(self, *, qos: str, annotations: dict[str, str] | None = None,
                 namespace: str = "ns") -> PodFacts:
        self.counter += 1
        parent = {"guaranteed": "/kubepods/pod{}", "burstable": "/kubepods/burstable/pod{}"}[qos]
        return PodFacts(sandbox_id=f"s{self.counter}", namespace=namespace,
                        name=f"p{self.counter}",
                        annotations=annotations or {},
                        cgroup_parent=parent.format(self.counter))

    def _container(self, pod: PodFacts, cpus: float | None) -> ContainerFacts:
        quota = None if cpus is None else int(cpus * PERIOD)
        return ContainerFacts(id=f"c{self.counter}", sandbox_id=pod.sandbox_id, name="main",
                              cpu_quota=quota, cpu_period=None if quota is None else PERIOD)

    def _create(self, pod: PodFacts, facts: ContainerFacts) -> list[str]:
        ledger_before, live_before = self.engine.ledger, self._snapshot()
        pool_before = len(self.engine.shared_pool())
        try:
            plan = self.runtime.create_container(pod, facts)
        except (AdmissionError, UpdateTransactionError) as exc:
            event(f"create refused: {type(exc).__name__}")  # --hypothesis-show-statistics
            assert self.engine.ledger is ledger_before, "a failed create changed the ledger"
            self._assert_untouched(live_before)
            return []
        assert plan.placement is not None
        self._assert_floor_kept(pool_before)
        self._assert_options_kept(plan.placement, plan.moves)
        return [facts.id]

    # -- rules ---------------------------------------------------------------------------------

    @rule(target=containers, cpus=st.sampled_from([None, 0.25, 0.5, 1.5]))
    def create_shared(self, cpus: float | None) -> object:
        pod = self._new_pod(qos="burstable")
        return multiple(*self._create(pod, self._container(pod, cpus)))

    @rule(target=containers, count=st.integers(1, 6))
    def create_integer(self, count: int) -> object:
        pod = self._new_pod(qos="guaranteed")
        return multiple(*self._create(pod, self._container(pod, count)))

    @rule(target=containers, count=st.integers(1, 6), data=st.data())
    def create_integer_with_devices(self, count: int, data: st.DataObject) -> object:
        """Devices on drawn NUMA nodes: when those nodes' exclusive-free CPUs hold the
        request, the CPUs lie there; whatever the hint, every invariant holds."""
        nodes = CPUSet(data.draw(st.sets(st.sampled_from(sorted(self.topology.numa_nodes)),
                                         min_size=1, max_size=2)))
        pod = self._new_pod(qos="guaranteed")
        facts = replace(self._container(pod, count), devices=(
            DeviceLocality(device="/dev/drawn", pci=("0000:41:00.0",), numa_nodes=nodes),))
        free = exclusive_free(self.topology, self.engine.ledger.reserved, self.settings) \
            - self.engine.draining
        near = CPUSet.union_of(self.topology.cpus_of_numa(n) for n in nodes)
        created = self._create(pod, facts)
        placed = self.engine.placement(facts.id)
        if created and placed is not None and placed.kind is Kind.INTEGER \
                and self.settings.allocation.alignment.uses_devices \
                and not self.settings.allocation.full_physical_cores and len(free & near) >= count:
            assert placed.cpus <= near, f"{placed.cpus} not within the devices' nodes {nodes}"
        return multiple(*created)

    @rule(target=containers, data=st.data())
    def create_annotated(self, data: st.DataObject) -> object:
        known = sorted(self.topology.known)
        # Mostly valid online pins; sometimes an offline or nonexistent CPU.
        pool = [*known, known[-1] + 1]
        pins = data.draw(st.sets(st.sampled_from(pool), min_size=1, max_size=4))
        value = CPUSet(pins).format()
        pod = self._new_pod(qos=data.draw(st.sampled_from(["guaranteed", "burstable"])),
                            annotations={"weka.io/cores-ids": value})
        created = self._create(pod, self._container(pod, data.draw(st.sampled_from([None, 1]))))
        if created:
            assert self.host.containers[created[0]].cpus == CPUSet(pins)
        if not self.settings.may_pin(pod.namespace):
            assert created == [], "a pin from a namespace that may not pin was admitted"
        return multiple(*created)

    @rule(target=containers, qos=st.sampled_from(["guaranteed", "burstable"]),
          cpus=st.sampled_from([None, 0.5, 2]), opt_out=st.booleans())
    def create_system_pod(self, qos: str, cpus: float | None, opt_out: bool) -> object:
        """A kube-system pod: on the reserved CPUs when the namespace is listed (unless it
        opts out), else placed by its QoS."""
        annotations = {RESERVED.pod_key: "false"} if opt_out else {}
        pod = self._new_pod(qos=qos, annotations=annotations, namespace="kube-system")
        created = self._create(pod, self._container(pod, None if qos == "burstable" else cpus))
        entry = self.engine.ledger.get(created[0]) if created else None
        if entry is not None:
            listed = self.settings.runs_on_reserved(pod.namespace) and not opt_out
            assert entry.on_reserved == listed, entry.reason
        return multiple(*created)

    @rule(target=containers, request=st.sampled_from([RESERVED, SHARED, MIXED, ISOLATED]),
          cpus=st.sampled_from([0.5, 1.5, 2, 2.5, 3.25]), per_container=st.booleans())
    def create_with_a_request(self, request: Toggle, cpus: float,
                              per_container: bool) -> object:
        """A Guaranteed pod asking for the reserved CPUs, the shared pool, or mixed CPUs."""
        key = request.container_prefix + "main" if per_container else request.pod_key
        pod = self._new_pod(qos="guaranteed", annotations={key: "true"})
        created = self._create(pod, self._container(pod, cpus))
        entry = self.engine.ledger.get(created[0]) if created else None
        if entry is not None and request is ISOLATED:
            # Isolated ones only when it got what it asked; else (best effort) none of them.
            assert entry.isolated in (True, None), entry.reason
            mine = entry.cpus & self.topology.isolated
            assert mine == (entry.cpus if entry.isolated else mine), entry.reason
            if entry.isolated is None and not self.settings.exclusive_on_isolated:
                assert not mine, entry.reason
        elif entry is not None:
            expected = {"reserved-cpus": "reserved", "shared-cpus": "shared"}.get(
                request.feature, "mixed" if cpus >= 1 and cpus % 1 else entry.label)
            assert entry.label == expected or (
                request is MIXED and entry.label == "shared" and "kept shared" in entry.reason
            ), (entry.label, entry.reason)
        return multiple(*created)

    @rule(value=st.sampled_from(["", "0,,1", "3-1", "a", "0, 1", "-1"]))
    def malformed_annotation_is_rejected_without_a_trace(self, value: str) -> None:
        pod = self._new_pod(qos="burstable", annotations={"weka.io/cores-ids": value})
        assert self._create(pod, self._container(pod, None)) == []

    @rule(container=consumes(containers))
    def remove(self, container: str) -> None:
        self.runtime.remove_container(container)
        # A stop followed by a remove: the second release must be a no-op.
        assert self.runtime.remove_container(container).updates == ()

    @rule(container=containers, cpus=st.sampled_from([None, 0.5, 1, 2, 3, 5]))
    def resize(self, container: str, cpus: float | None) -> None:
        live = self.host.containers.get(container)
        if live is None or container in self.unmanaged:
            return
        pod = self.host.pods[live.facts.sandbox_id]
        quota = None if cpus is None else int(cpus * PERIOD)
        facts = ContainerFacts(id=container, sandbox_id=pod.sandbox_id, name=live.facts.name,
                               cpu_quota=quota, cpu_period=None if quota is None else PERIOD)
        ledger_before, live_before = self.engine.ledger, self._snapshot()
        before = self.engine.placement(container)
        pool_before = len(self.engine.shared_pool())
        try:
            plan = self.runtime.resize_container(pod, facts)
        except (AdmissionError, UpdateTransactionError):
            assert self.engine.ledger is ledger_before, "a failed resize changed the ledger"
            self._assert_untouched(live_before)
            return
        placement = plan.placement
        assert placement is not None
        self._assert_floor_kept(pool_before)
        if before is None or placement.cpus != before.cpus:  # a size kept is no new decision
            self._assert_options_kept(placement, plan.moves)
        if (placement.kind is Kind.INTEGER and before is not None and before.kind is Kind.INTEGER
                and not placement.with_shared and not before.with_shared):
            wanted = int(cpus or 0)
            if "re-placed on whole cores" in plan.reason:
                # Whole-core mode re-places a set from before it was on (by design): the new
                # set is whole cores (checked above), and it was not whole cores before.
                whole = all((core & self.topology.online) <= before.cpus
                            for core in self.topology.cores_within(before.cpus))
                assert self.settings.allocation.full_physical_cores
                assert not whole
            elif "re-placed to stay aligned" in plan.reason:
                # Grown in place it would break a strict policy: placed afresh, and aligned.
                options = self.settings.allocation
                assert options.alignment.strict
                assert not misalignment(self.topology, options.alignment, placement.cpus,
                                        near=CPUSet(), eligible=exclusive_free(
                                            self.topology, CPUSet(), self.settings))
            else:
                # Kept where possible: a shrink is a subset, a growth a superset.
                assert placement.cpus <= before.cpus or placement.cpus >= before.cpus
            assert len(placement.cpus) == wanted
        if placement.kind is Kind.ANNOTATED and before is not None \
                and before.kind is Kind.ANNOTATED:
            assert placement.cpus == before.cpus  # pins never move

    @rule(options=st.fixed_dictionaries({
        "allocation": allocation_options(),
        "pin_namespaces": st.sampled_from([("*",), ("weka",)]),
        "min_shared_pool": st.sampled_from([0, 2]),
        "unmet_requests": st.sampled_from(Unmet),
    }))
    def reconfigure_live(self, options: dict[str, Any]) -> None:
        """An operator's reload: later decisions follow the new options, placements stay."""
        ledger = self.engine.ledger
        self.settings = replace(self.settings, **options)
        self.engine.reconfigure(self.settings)
        assert self.engine.ledger is ledger

    @rule()
    def remove_unknown_container_is_a_no_op(self) -> None:
        ledger = self.engine.ledger
        self.runtime.remove_container("never-existed")
        assert self.engine.ledger is ledger

    @rule(container=containers)
    def fail_next_update_of(self, container: str) -> None:
        if container in self.host.containers:
            self.host.fail_updates_for(container, times=1)

    @rule(cpus=st.sampled_from([None, 0.5, 1, 2]))
    def container_starts_behind_the_plugins_back(self, cpus: float | None) -> None:
        pod = self._new_pod(qos="guaranteed" if cpus in (1, 2) else "burstable")
        self.host.add_pod(pod)
        facts = self._container(pod, cpus)
        self.host.start_unmanaged(facts)
        self.unmanaged.add(facts.id)

    @rule()
    def synchronize(self) -> None:
        ledger_before, live_before = self.engine.ledger, self._snapshot()
        try:
            plan = self.runtime.synchronize()
        except UpdateTransactionError:
            assert self.engine.ledger is ledger_before
            self._assert_untouched(live_before)
            return
        assert set(self.engine.ledger.entries) == set(self.host.containers)
        self.unmanaged.clear()
        # Containers the plugin never admitted can leave the pool empty (a shared container
        # started while every CPU was exclusive): synchronize must report it, not hide it.
        self.pool_exhausted_at_sync = any(isinstance(p, SharedPoolExhaustedError)
                                          for p in plan.problems)
        for problem in plan.problems:
            assert (str(problem).startswith(("ns/", "kube-system/"))
                    or problem.reason == "shared-pool-below-minimum")
