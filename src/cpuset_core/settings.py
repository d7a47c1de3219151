"""Policy settings of the core: plain frozen values, no loading (adapters load and validate)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fnmatch import fnmatchcase

from cpuset_core.cpuset import EMPTY, CPUSet

DEFAULT_PIN_ANNOTATION = "weka.io/cores-ids"


class Spanning(enum.Enum):
    """How a request that no single NUMA node holds is spread over the nodes it needs."""

    PACK = "pack"
    """Fill the nodes with the most whole free cores first (leaves the others' room intact)."""
    SPREAD = "spread"
    """The same fewest nodes, with the CPUs divided as evenly as whole cores allow (even memory
    bandwidth per node for workloads that spread their threads)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """How the engine classifies and places containers. Defaults need no tuning."""

    pin_annotation: str = DEFAULT_PIN_ANNOTATION
    """Pod annotation whose value lists the CPUs an annotated pod is pinned to."""
    pin_namespaces: tuple[str, ...] = ("*",)
    """Namespaces allowed to use the pin annotation: exact names or shell-style globs
    (``fnmatch``, case-sensitive). A pin from any other namespace is refused."""
    system_reserved: CPUSet = EMPTY
    """CPUs kept for the system: never given to integer containers."""
    strict_reservation: bool = False
    """Also keep ``system_reserved`` out of the shared pool (otherwise shared pods may use it)."""
    exclusive_on_isolated: bool = False
    """Allow integer containers on isolated CPUs (shared containers never use them)."""
    full_physical_cores: bool = False
    """Give integer containers whole physical cores only (every online thread of each core);
    a request that cannot be met that way is refused rather than split."""
    spanning: Spanning = Spanning.PACK
    """How requests larger than any NUMA node's free CPUs are laid out over several nodes."""
    keep_free_numa_nodes: bool = False
    """Place requests that fit one NUMA node in a node already in use whenever one holds them,
    even when that gives up L3 confinement, so wholly free nodes stay free for NUMA-sized
    requests (docs/allocation.md has the measured trade-off)."""
    min_shared_pool: int = 0
    """Refuse pins and exclusive requests that would shrink the shared pool below this many
    CPUs (0: only an empty pool is refused, and only while shared containers exist)."""

    def __post_init__(self) -> None:
        if self.min_shared_pool < 0:
            raise ValueError(f"min_shared_pool must be >= 0, got {self.min_shared_pool}")
        if not self.pin_annotation:
            raise ValueError("pin_annotation must not be empty")
        if not isinstance(self.spanning, Spanning):
            raise ValueError(f"spanning must be a Spanning, got {self.spanning!r}")
        blank = [p for p in self.pin_namespaces if not p]
        if blank:
            raise ValueError("pin_namespaces must not contain an empty pattern")

    def may_pin(self, namespace: str) -> bool:
        """Whether pods in ``namespace`` may use the pin annotation."""
        return any(fnmatchcase(namespace, pattern) for pattern in self.pin_namespaces)
