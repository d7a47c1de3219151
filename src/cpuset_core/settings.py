"""Policy settings of the core: plain frozen values, no loading (adapters load and validate)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from fnmatch import fnmatchcase
from typing import Final

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.policy.options import DEFAULT_OPTIONS, AllocationOptions
from cpuset_core.workload import Unmet

DEFAULT_PIN_ANNOTATION = "weka.io/cores-ids"


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
    allocation: AllocationOptions = DEFAULT_OPTIONS
    """How integer containers' exclusive CPUs are chosen (whole cores, NUMA spanning, free
    nodes)."""
    min_shared_pool: int = 0
    """Refuse pins and exclusive requests that would shrink the shared pool below this many
    CPUs (0: only an empty pool is refused, and only while shared containers exist)."""
    reserved_namespaces: tuple[str, ...] = ()
    """Namespaces (exact names or globs, like ``pin_namespaces``) whose containers run on the
    reserved CPUs (``system_reserved``) instead of the shared pool, unless a container says
    ``reserved-cpus…=false`` (:mod:`cpuset_core.workload`); a pin still wins."""
    unmet_requests: Unmet = Unmet.BEST_EFFORT
    """What happens to a workload request the node cannot meet: ``best-effort`` places the
    container as if it had not asked (and says so), ``refuse`` fails its creation."""

    def __post_init__(self) -> None:
        if self.min_shared_pool < 0:
            raise ValueError(f"min_shared_pool must be >= 0, got {self.min_shared_pool}")
        if not self.pin_annotation:
            raise ValueError("pin_annotation must not be empty")
        for name in ("pin_namespaces", "reserved_namespaces"):
            if any(not pattern for pattern in getattr(self, name)):
                raise ValueError(f"{name} must not contain an empty pattern")
        if not isinstance(self.unmet_requests, Unmet):
            raise ValueError(f"unmet_requests must be an Unmet, got {self.unmet_requests!r}")

    def may_pin(self, namespace: str) -> bool:
        """Whether pods in ``namespace`` may use the pin annotation."""
        return any(fnmatchcase(namespace, pattern) for pattern in self.pin_namespaces)

    def runs_on_reserved(self, namespace: str) -> bool:
        """Whether pods in ``namespace`` run on the reserved CPUs unless they say otherwise."""
        return any(fnmatchcase(namespace, pattern) for pattern in self.reserved_namespaces)

    def by_name(self) -> dict[str, object]:
        """Every setting's value by name, in declaration order; each allocation option as
        ``allocation.<option>`` (the names :data:`LIVE_SETTINGS` uses)."""
        named: dict[str, object] = {}
        for setting in fields(self):
            value = getattr(self, setting.name)
            if isinstance(value, AllocationOptions):
                named.update((f"{setting.name}.{option.name}", getattr(value, option.name))
                             for option in fields(value))
            else:
                named[setting.name] = value
        return named

    def differences(self, other: Settings) -> list[str]:
        """The names (as in :meth:`by_name`) of the settings whose values differ in ``other``."""
        theirs = other.by_name()
        return [name for name, value in self.by_name().items() if theirs[name] != value]


# Not exclusive_on_isolated: turning it off would make the isolated CPUs integer containers
# already hold invalid, and the next synchronize or hotplug would move them.
LIVE_SETTINGS: Final = frozenset({
    "pin_namespaces", "min_shared_pool", "unmet_requests",
    *(f"allocation.{option.name}" for option in fields(AllocationOptions)),
})
"""Settings (named as in :meth:`Settings.by_name`) that ``CpusetEngine.reconfigure`` may
change on a running engine: who may pin, the minimum shared pool, what happens to unmet
requests, and every allocation option."""
