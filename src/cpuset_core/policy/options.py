"""The operator's allocation options (``Settings.allocation``) and the whole-core refusal.

Each option is named as the ``[cpus]`` configuration key that sets it: the loader and the list
of settings a running engine may change are derived from these fields, so a new option is one
field here (plus the allocator code that reads it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cpuset_core.policy.alignment import Alignment, AlignmentScope


class Spanning(enum.Enum):
    """How a request that no single NUMA node holds is spread over the nodes it needs."""

    PACK = "pack"
    """Fill the nodes with the most whole free cores first (leaves the others' room intact)."""
    SPREAD = "spread"
    """The same fewest nodes, with the CPUs divided as evenly as whole cores allow (even memory
    bandwidth per node for workloads that spread their threads)."""


class MemoryBinding(enum.Enum):
    """Which integer containers get ``cpuset.mems`` = the memory nodes of their CPUs."""

    NONE = "none"
    """None: only pins are bound (requirement §3.3); integer containers keep every node."""
    HUGEPAGES = "hugepages"
    """Integer containers with a hugepage limit (their pages come from the nodes they may use:
    bound, they come from the node of their CPUs)."""
    EXCLUSIVE = "exclusive"
    """Every integer container."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationOptions:
    """How integer containers' exclusive CPUs are chosen. Every option may change on a running
    engine: it steers later decisions only."""

    full_physical_cores: bool = False
    """Give integer containers whole physical cores only (every online thread of each core);
    a request that cannot be met that way is refused rather than split."""
    numa_spanning: Spanning = Spanning.PACK
    """How requests larger than any NUMA node's free CPUs are laid out over several nodes."""
    keep_free_numa_nodes: bool = False
    """Place requests that fit one NUMA node in a node already in use whenever one holds them,
    even when that gives up L3 confinement, so wholly free nodes stay free for NUMA-sized
    requests (docs/allocation.md has the measured trade-off)."""

    alignment: Alignment = Alignment.BEST_EFFORT
    """How strictly integer containers' CPUs are aligned with NUMA nodes and their devices
    (``policy/alignment.py``): ``none``, ``best-effort``, ``restricted``,
    ``single-numa-node``; the strict ones refuse what cannot be aligned."""
    alignment_scope: AlignmentScope = AlignmentScope.CONTAINER
    """Whose hints count: each container's own (``container``) or its pod's (``pod``)."""

    bind_memory: MemoryBinding = MemoryBinding.NONE
    """Which integer containers get the memory nodes of their CPUs as ``cpuset.mems``, kept
    right across moves and resizes (``none``, ``hugepages``, ``exclusive``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.bind_memory, MemoryBinding):
            raise ValueError(f"bind_memory must be a MemoryBinding, got {self.bind_memory!r}")
        if not isinstance(self.numa_spanning, Spanning):
            raise ValueError(f"numa_spanning must be a Spanning, got {self.numa_spanning!r}")
        if not isinstance(self.alignment, Alignment):
            raise ValueError(f"alignment must be an Alignment, got {self.alignment!r}")
        if not isinstance(self.alignment_scope, AlignmentScope):
            raise ValueError(f"alignment_scope must be an AlignmentScope, got "
                             f"{self.alignment_scope!r}")


DEFAULT_OPTIONS = AllocationOptions()


class WholeCoresUnavailableError(ValueError):
    """Whole-core mode: no set of wholly free cores adds up to the request."""

    def __init__(self, count: int, detail: str) -> None:
        self.count = count
        self.detail = detail
        super().__init__(f"{count} CPU(s) as whole cores: {detail}")
