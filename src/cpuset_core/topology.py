"""The machine's CPU topology as a plain, immutable, cheaply queryable value.

Built from plain data (one :class:`CpuInfo` per logical CPU the kernel describes) by whatever
reads the machine (sysfs, a JSON file, a test). All indexes are computed once at construction, so
every query afterwards is a dictionary lookup or a few bitmask operations.

Identity rules, taken from real machines rather than from averages:

* a physical core is ``(socket, die, core)``: the kernel's ``core_id`` is only unique inside a
  package, and threads per core are counted per core (offline siblings and mixed SMT exist);
* an L3 group is whatever id the source gives (sysfs: one id per distinct ``shared_cpu_list``);
  a CPU without one is grouped with its socket;
* a NUMA node may have no memory (CPU-only nodes); :attr:`Topology.memory_nodes` says which do.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import TopologyError

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuInfo:
    """What the kernel says about one logical CPU."""

    cpu: int
    core: int
    socket: int
    numa: int
    die: int = 0
    l3: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Topology:
    """Logical CPUs with their core, socket, die, NUMA node and L3 group; online and isolated
    CPUs; NUMA distances and which nodes have memory."""

    cpus: tuple[CpuInfo, ...]
    online: CPUSet
    isolated: CPUSet = EMPTY
    numa_distances: Mapping[int, Mapping[int, int]] = field(default_factory=dict)
    memory_nodes: CPUSet | None = None
    """NUMA nodes that have memory; ``None`` means every node does."""

    _by_cpu: dict[int, CpuInfo] = field(init=False, repr=False, compare=False)
    _core_index: dict[int, int] = field(init=False, repr=False, compare=False)
    _cores: tuple[CPUSet, ...] = field(init=False, repr=False, compare=False)
    _numa: dict[int, CPUSet] = field(init=False, repr=False, compare=False)
    _sockets: dict[int, CPUSet] = field(init=False, repr=False, compare=False)
    _l3: dict[int, CPUSet] = field(init=False, repr=False, compare=False)
    _known: CPUSet = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_cpu: dict[int, CpuInfo] = {}
        for info in self.cpus:
            if info.cpu in by_cpu:
                raise TopologyError(f"CPU {info.cpu} is described twice")
            by_cpu[info.cpu] = info
        if not by_cpu:
            raise TopologyError("topology describes no CPU")
        known = CPUSet(by_cpu)
        if not self.online.issubset(known):
            raise TopologyError(f"online CPU(s) {self.online - known} have no topology "
                                f"information (described: {known})")
        if not self.online:
            raise TopologyError("no CPU is online")
        cores = _group(by_cpu.values(), lambda i: (i.socket, i.die, i.core))
        ordered = sorted(cores.values(), key=CPUSet.first)
        core_index = {cpu: n for n, core in enumerate(ordered) for cpu in core}
        numa = dict(sorted(_group(by_cpu.values(), lambda i: i.numa).items()))
        sockets = dict(sorted(_group(by_cpu.values(), lambda i: i.socket).items()))
        l3_raw = _group(by_cpu.values(), lambda i: (0, i.l3) if i.l3 is not None else (1, i.socket))
        l3 = dict(enumerate(sorted(l3_raw.values(), key=CPUSet.first)))
        setter = object.__setattr__
        setter(self, "_by_cpu", by_cpu)
        setter(self, "_core_index", core_index)
        setter(self, "_cores", tuple(ordered))
        setter(self, "_numa", numa)
        setter(self, "_sockets", sockets)
        setter(self, "_l3", l3)
        setter(self, "_known", known)

    # -- CPUs and cores ------------------------------------------------------------------------

    @property
    def known(self) -> CPUSet:
        """Every CPU the topology describes (online or not)."""
        return self._known

    def info(self, cpu: int) -> CpuInfo:
        """Return what is known of ``cpu``; raises ``KeyError`` for an unknown CPU."""
        return self._by_cpu[cpu]

    def core_cpus(self, cpu: int) -> CPUSet:
        """Return every thread of the physical core ``cpu`` belongs to (``cpu`` included)."""
        return self._cores[self._core_index[cpu]]

    def siblings(self, cpu: int) -> CPUSet:
        """Return the other threads of ``cpu``'s physical core."""
        return self.core_cpus(cpu) - CPUSet((cpu,))

    @property
    def cores(self) -> tuple[CPUSet, ...]:
        """Every physical core as the set of its threads, ordered by lowest CPU id."""
        return self._cores

    def cores_within(self, cpus: CPUSet) -> tuple[CPUSet, ...]:
        """Return the cores that have at least one thread in ``cpus``, in core order."""
        indexes = {i for cpu in cpus if (i := self._core_index.get(cpu)) is not None}
        return tuple(self._cores[i] for i in sorted(indexes))

    # -- NUMA nodes, sockets, L3 groups --------------------------------------------------------

    @property
    def numa_nodes(self) -> tuple[int, ...]:
        return tuple(self._numa)

    def numa_of(self, cpu: int) -> int:
        return self._by_cpu[cpu].numa

    def cpus_of_numa(self, node: int) -> CPUSet:
        """Return the CPUs of NUMA ``node`` (empty for an unknown node)."""
        return self._numa.get(node, EMPTY)

    def numa_nodes_of(self, cpus: CPUSet) -> CPUSet:
        """Return the set of NUMA nodes that hold at least one CPU of ``cpus``."""
        return CPUSet(node for node, members in self._numa.items() if not members.isdisjoint(cpus))

    @property
    def sockets(self) -> tuple[int, ...]:
        return tuple(self._sockets)

    def cpus_of_socket(self, socket: int) -> CPUSet:
        return self._sockets.get(socket, EMPTY)

    @property
    def l3_groups(self) -> tuple[CPUSet, ...]:
        """Every last-level-cache group as a CPU set, ordered by lowest CPU id."""
        return tuple(self._l3.values())

    def nodes_with_memory(self) -> CPUSet:
        """Return the NUMA nodes whose memory can be named in ``cpuset.mems``."""
        if self.memory_nodes is None:
            return CPUSet(self._numa)
        return self.memory_nodes

    def distance(self, a: int, b: int) -> int | None:
        """Return the SLIT distance from node ``a`` to node ``b``, or ``None`` when unknown."""
        return self.numa_distances.get(a, {}).get(b)


def _group(infos: Iterable[CpuInfo], key: Callable[[CpuInfo], K]) -> dict[K, CPUSet]:
    masks: dict[K, int] = {}
    for info in infos:
        k = key(info)
        masks[k] = masks.get(k, 0) | (1 << info.cpu)
    return {k: CPUSet.from_mask(m) for k, m in masks.items()}
