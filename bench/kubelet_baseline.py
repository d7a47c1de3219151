"""The baseline of the quality benchmark: the kubelet static CPU manager's default allocation.

A re-implementation, from its documented behaviour, of ``takeByTopologyNUMAPacked`` in
``pkg/kubelet/cm/cpumanager/cpu_assignment.go`` (Kubernetes 1.23+): the path the static policy
takes with no policy options (packed CPU sorting, no ``distribute-cpus-across-numa``, no
``align-by-uncorecache``) and with the topology manager's default policy ``none`` (no NUMA hint).
It lives in the benchmark, never in the product. What it does, in order:

1. **Whole first-level domains, then whole second-level domains.** When there are at least as
   many sockets as NUMA nodes (a NUMA node holds one or more sockets) the first level is the NUMA
   node and the second the socket ("NUMA first"); otherwise the first level is the socket and the
   second the NUMA node ("sockets first"). A domain is taken whole when all its CPUs are free and
   the request still needs at least that many CPUs.
2. **Whole cores**, while the request still needs at least a core's worth.
3. **Single threads** until the request is met.

There is no fit check anywhere: nothing asks whether one NUMA node could hold the whole request.
Every list is ordered *ascending* by free CPUs ("packed": fill the fullest domain first), ties by
id, hierarchically: for "sockets first", sockets by their free CPUs, inside each socket its NUMA
nodes by theirs, inside each node its cores by theirs (and a core's threads by CPU id); "NUMA
first" swaps the socket and NUMA levels. A core's id is its lowest thread (the kubelet's
``getUniqueCoreID``). The lists are computed once at the start of each step, with the free CPUs of
that moment (each step sees what the previous steps took).

Faithful quirks kept: "a socket is free" compares its free CPUs with the machine-wide average
``CPUsPerSocket() = NumCPUs / NumSockets`` and "a core is free" with ``CPUsPerCore() = NumCPUs /
NumCores`` (integer division), as the kubelet does; so on a machine with an offline sibling
(7 online CPUs on 4 cores: 7 // 4 = 1) only cores with exactly one free thread count as "free".

One deviation, to keep the replayed state valid: when the kubelet takes a "free" core or socket
it adds *all* of the unit's CPUs to the result, even ones that are not available (possible only
through the averaging quirk above); here only the unit's available CPUs are added. On every
machine whose cores and sockets all have the same size the two are identical.

Cost: each step sorts the domains once, O(CPUs log CPUs) per decision with bitmasks. (The Go
code recomputes free-CPU sets inside its sort comparators, which is why it is much slower on
large machines; the decision times of this re-implementation say nothing about the kubelet's.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from cpuset_core import CPUSet, Topology


@dataclass(frozen=True, slots=True)
class _Core:
    id: int
    """The lowest online thread (the kubelet's unique core id)."""
    mask: int
    """Every online thread of the core."""


@dataclass(frozen=True, slots=True)
class _Group:
    """A socket or NUMA node: its online CPUs, the lower-level groups inside it and its cores."""

    id: int
    mask: int
    children: tuple[_Group, ...]
    cores: tuple[_Core, ...]


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class KubeletTopology:
    """What the kubelet's ``topology.Discover`` knows of a machine (online CPUs only), with the
    averages the static policy uses."""

    def __init__(self, topology: Topology) -> None:
        online = topology.online.mask
        self.online = online
        cores = [_Core(id=(m & -m).bit_length() - 1, mask=m)
                 for m in (core.mask & online for core in topology.cores) if m]
        sockets = {s: m for s in topology.sockets if (m := topology.cpus_of_socket(s).mask
                                                         & online)}
        numa = {n: m for n in topology.numa_nodes if (m := topology.cpus_of_numa(n).mask
                                                      & online)}
        self.num_cpus = online.bit_count()
        self.num_cores = len(cores)
        self.num_sockets = len(sockets)
        self.num_numa_nodes = len(numa)
        self.cpus_per_core = self.num_cpus // self.num_cores
        self.cpus_per_socket = self.num_cpus // self.num_sockets
        self.numa_first = self.num_sockets >= self.num_numa_nodes
        upper, lower = (numa, sockets) if self.numa_first else (sockets, numa)
        groups: list[_Group] = []
        for uid, umask in sorted(upper.items()):
            children = tuple(
                _Group(id=lid, mask=lmask, children=(),
                       cores=tuple(c for c in cores if c.mask & lmask))
                for lid, lmask in sorted(lower.items()) if lmask & umask)
            groups.append(_Group(id=uid, mask=umask, children=children,
                                 cores=tuple(c for c in cores if c.mask & umask)))
        self._upper = tuple(groups)
        self._numa_mask = numa
        self._socket_mask = sockets

    # -- the kubelet's orderings (ascending free CPUs, ties by id) ------------------------------

    @staticmethod
    def _ascending(groups: Sequence[_Group], free: int) -> list[_Group]:
        present = [g for g in groups if g.mask & free]
        present.sort(key=lambda g: ((g.mask & free).bit_count(), g.id))
        return present

    def _lower_in_order(self, free: int) -> list[_Group]:
        return [low for up in self._ascending(self._upper, free)
                for low in self._ascending(up.children, free)]

    def sorted_numa_nodes(self, free: int) -> list[tuple[int, int]]:
        """``sortAvailableNUMANodes``: (node, CPUs) of every node with a free CPU."""
        groups = (self._ascending(self._upper, free) if self.numa_first
                  else self._lower_in_order(free))
        return [(g.id, self._numa_mask[g.id]) for g in groups]

    def sorted_sockets(self, free: int) -> list[tuple[int, int]]:
        """``sortAvailableSockets``: (socket, CPUs) of every socket with a free CPU."""
        groups = (self._lower_in_order(free) if self.numa_first
                  else self._ascending(self._upper, free))
        return [(g.id, self._socket_mask[g.id]) for g in groups]

    def sorted_cores(self, free: int) -> list[_Core]:
        """``sortAvailableCores``: every core with a free CPU."""
        result: list[_Core] = []
        for group in self._lower_in_order(free):
            cores = [c for c in group.cores if c.mask & free]
            cores.sort(key=lambda c: ((c.mask & free).bit_count(), c.id))
            result.extend(cores)
        return result


class _Accumulator:
    def __init__(self, topo: KubeletTopology, free: int, count: int) -> None:
        self.topo = topo
        self.free = free
        self.needed = count
        self.result = 0

    def take(self, mask: int) -> None:
        self.result |= mask
        self.free &= ~mask
        self.needed -= mask.bit_count()

    @property
    def satisfied(self) -> bool:
        return self.needed < 1

    def take_full_numa_nodes(self) -> None:
        for _node, mask in self.topo.sorted_numa_nodes(self.free):
            if self.free & mask == mask and self.needed >= mask.bit_count():
                self.take(mask)

    def take_full_sockets(self) -> None:
        per_socket = self.topo.cpus_per_socket
        for _socket, mask in self.topo.sorted_sockets(self.free):
            if (self.free & mask).bit_count() == per_socket and self.needed >= mask.bit_count():
                self.take(mask & self.free)

    def take_full_cores(self) -> None:
        per_core = self.topo.cpus_per_core
        free_cores = [c for c in self.topo.sorted_cores(self.free)
                      if (c.mask & self.free).bit_count() == per_core]
        for core in free_cores:
            if self.needed >= core.mask.bit_count():
                self.take(core.mask & self.free)

    def take_remaining_cpus(self) -> None:
        for core in self.topo.sorted_cores(self.free):
            for cpu in _bits(core.mask & self.free):
                self.take(1 << cpu)
                if self.satisfied:
                    return


def take_by_topology(topo: KubeletTopology, available: CPUSet, count: int) -> CPUSet:
    """Return ``count`` CPUs out of ``available`` the way the kubelet's default static policy
    picks them; raises ``ValueError`` when fewer than ``count`` are available."""
    free = available.mask & topo.online
    if count < 1:
        return CPUSet()
    if count > free.bit_count():
        raise ValueError(f"not enough cpus available to satisfy request: requested={count}, "
                         f"available={free.bit_count()}")
    acc = _Accumulator(topo, free, count)
    if topo.numa_first:
        steps = (acc.take_full_numa_nodes, acc.take_full_sockets)
    else:
        steps = (acc.take_full_sockets, acc.take_full_numa_nodes)
    for step in (*steps, acc.take_full_cores, acc.take_remaining_cpus):
        step()
        if acc.satisfied:
            return CPUSet.from_mask(acc.result)
    raise ValueError("failed to allocate cpus")  # unreachable: enough CPUs were available
