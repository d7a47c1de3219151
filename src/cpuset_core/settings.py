"""Policy settings of the core: plain frozen values, no loading (adapters load and validate)."""

from __future__ import annotations

from dataclasses import dataclass

from cpuset_core.cpuset import EMPTY, CPUSet

DEFAULT_PIN_ANNOTATION = "weka.io/cores-ids"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """How the engine classifies and places containers. Defaults need no tuning."""

    pin_annotation: str = DEFAULT_PIN_ANNOTATION
    """Pod annotation whose value lists the CPUs an annotated pod is pinned to."""
    system_reserved: CPUSet = EMPTY
    """CPUs kept for the system: never given to integer containers."""
    strict_reservation: bool = False
    """Also keep ``system_reserved`` out of the shared pool (otherwise shared pods may use it)."""
    exclusive_on_isolated: bool = False
    """Allow integer containers on isolated CPUs (shared containers never use them)."""
    min_shared_pool: int = 0
    """Refuse pins and exclusive requests that would shrink the shared pool below this many
    CPUs (0: only an empty pool is refused, and only while shared containers exist)."""

    def __post_init__(self) -> None:
        if self.min_shared_pool < 0:
            raise ValueError(f"min_shared_pool must be >= 0, got {self.min_shared_pool}")
