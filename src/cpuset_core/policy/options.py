"""The operator's allocation options, as the allocator sees them, and its whole-core refusal."""

from __future__ import annotations

from dataclasses import dataclass

from cpuset_core.settings import Settings, Spanning


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationOptions:
    """The operator's allocation options (from :class:`Settings`)."""

    whole_cores: bool = False
    """Only wholly free physical cores, and only requests they add up to exactly."""
    spanning: Spanning = Spanning.PACK
    keep_free_numa_nodes: bool = False
    """Prefer domains in NUMA nodes already in use, even over L3 confinement."""

    @classmethod
    def from_settings(cls, settings: Settings) -> AllocationOptions:
        return cls(whole_cores=settings.full_physical_cores, spanning=settings.spanning,
                   keep_free_numa_nodes=settings.keep_free_numa_nodes)


DEFAULT_OPTIONS = AllocationOptions()


class WholeCoresUnavailableError(ValueError):
    """Whole-core mode: no set of wholly free cores adds up to the request."""

    def __init__(self, count: int, detail: str) -> None:
        self.count = count
        self.detail = detail
        super().__init__(f"{count} CPU(s) as whole cores: {detail}")
