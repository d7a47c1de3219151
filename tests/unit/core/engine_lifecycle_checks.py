"""What must hold after every step of the engine's model-based test (test_engine_stateful.py):
the checks and invariants, apart from the rules that drive the lifecycle."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis.stateful import invariant

from cpuset_adapters.dry_run import DryRunHost, DryRunRuntime
from cpuset_core import (
    ContainerUpdate,
    CPUSet,
    CpusetEngine,
    Kind,
    Placement,
    Settings,
    Topology,
    violations,
)


class LifecycleChecks:
    """Mixed into the state machine, which sets these attributes when it starts."""

    engine: CpusetEngine
    host: DryRunHost
    runtime: DryRunRuntime
    topology: Topology
    settings: Settings
    unmanaged: set[str]
    pool_exhausted_at_sync: bool

    def _snapshot(self) -> dict[str, tuple[CPUSet, CPUSet | None]]:
        # An unset cpuset means "every CPU (memory node) of the parent", which is what a
        # restore writes back.
        every_node = self.topology.nodes_with_memory()
        return {cid: (c.cpus if c.cpus is not None else self.topology.online,
                      c.mems if c.mems is not None else every_node)
                for cid, c in self.host.containers.items()}

    def _assert_untouched(self, before: dict[str, tuple[CPUSet, CPUSet | None]]) -> None:
        """Every container is as it was; a drifted one may instead have been put back where
        the (unchanged) ledger says it belongs, which is the safe state it should have had."""
        after = self._snapshot()
        assert after.keys() == before.keys()
        for cid, state in after.items():
            if state == before[cid]:
                continue
            placement = self.engine.placement(cid)
            assert cid in self.runtime.drifted, cid
            assert placement is not None, cid
            assert state[0] == placement.cpus, cid

    def _assert_options_kept(self, placement: Placement, moves: Sequence[ContainerUpdate]) -> None:
        """What a decision placed honours the options in force when it was made."""
        if not self.settings.allocation.full_physical_cores:
            return
        # A mixed container's update holds the shared pool too: its own CPUs are the rest.
        pool = self.engine.shared_pool()
        placed = [placement.cpus - pool] if placement.kind is Kind.INTEGER else []
        for cpus in [*placed, *(m.cpus - pool for m in moves if m.kind is Kind.INTEGER)]:
            for core in self.topology.cores_within(cpus):
                assert (core & self.topology.online) <= cpus, f"{cpus} splits core {core}"

    def _assert_floor_kept(self, pool_before: int) -> None:
        """An admission that shrank the shared pool left it at or above the minimum."""
        after = len(self.engine.shared_pool())
        if after < pool_before:
            assert after >= self.settings.min_shared_pool, (pool_before, after)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def ledger_invariants_hold(self) -> None:
        if not hasattr(self, "engine"):
            return
        found = violations(self.topology, self.engine.ledger, self.settings)
        if self.pool_exhausted_at_sync and self.engine.shared_pool():
            self.pool_exhausted_at_sync = False
        if self.pool_exhausted_at_sync:
            found = [v for v in found if not v.startswith("7:")]
        assert found == []

    @invariant()
    def managed_containers_run_where_the_ledger_says(self) -> None:
        if not hasattr(self, "engine"):
            return
        ledger = self.engine.ledger
        assert set(ledger.entries) <= set(self.host.containers)
        assert set(self.host.containers) - set(ledger.entries) <= self.unmanaged
        for cid in set(ledger.entries) - self.runtime.drifted:
            placement = self.engine.placement(cid)
            assert placement is not None
            if placement.kind is Kind.SHARED and not placement.cpus:
                assert self.pool_exhausted_at_sync  # reported, and left where they were
                continue
            live = self.host.containers[cid]
            assert live.cpus == placement.cpus, cid
            if placement.mems is not None:
                assert live.mems == placement.mems

    @invariant()
    def safety_holds_even_for_drifted_containers(self) -> None:
        if not hasattr(self, "engine"):
            return
        ledger = self.engine.ledger
        seen = CPUSet()
        for entry in ledger.entries.values():
            live = self.host.containers[entry.container_id].cpus
            on_reserved = entry.on_reserved and bool(self.engine.reserved_pool())
            if entry.kind is Kind.SHARED and not on_reserved and not self.engine.shared_pool():
                assert self.pool_exhausted_at_sync  # reported at synchronize; nowhere to go
                continue
            assert live is not None
            if entry.kind is Kind.SHARED and on_reserved:
                # The system's CPUs: never exclusive (a pin may name them, and shares them).
                assert live.isdisjoint(ledger.exclusive), entry.subject
                assert live <= self.settings.system_reserved, entry.subject
            elif entry.kind is Kind.SHARED:
                assert live.isdisjoint(ledger.reserved), entry.subject
            elif entry.kind is Kind.INTEGER:
                # A mixed one runs on the shared pool too: only its own CPUs are exclusive.
                mine = live & ledger.exclusive if entry.with_shared else live
                assert mine.isdisjoint(seen), entry.subject
                assert live.isdisjoint(ledger.reserved - entry.cpus), entry.subject
                seen |= mine
