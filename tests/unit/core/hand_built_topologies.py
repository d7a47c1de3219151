"""The hand-built machines the ``Topology`` tests query: SMT, offline CPUs with and without
information, a memoryless node, and a shuffled sparse machine.
"""

from __future__ import annotations

from collections.abc import Callable

from cpuset_core.cpuset import CPUSet
from cpuset_core.topology import CpuInfo, Topology


def cpus(text: str) -> CPUSet:
    return CPUSet.parse(text, allow_empty=True)


def smt_machine(l3: Callable[[int], int | None] = lambda _cpu: None) -> Topology:
    """2 sockets x 4 cores x 2 threads = 16 CPUs; CPU n and n+8 are siblings.

    Socket 0 (= NUMA node 0) holds cores 0-3 (CPUs 0-3 and 8-11), socket 1 (= node 1) holds
    cores 0-3 again (CPUs 4-7 and 12-15): the kernel's core id repeats across packages.
    """
    infos = []
    for cpu in range(16):
        thread0 = cpu % 8
        socket = thread0 // 4
        infos.append(CpuInfo(cpu=cpu, core=thread0 % 4, socket=socket, numa=socket, l3=l3(cpu)))
    return Topology(
        cpus=tuple(infos),
        online=cpus("0-15"),
        numa_distances={0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}},
    )


SMT = smt_machine()


def offline_without_info() -> Topology:
    """4 CPUs, one core each; CPU 3 is offline and the kernel says nothing about it."""
    infos = tuple(CpuInfo(cpu=c, core=c, socket=0, numa=0) for c in range(3))
    return Topology(cpus=infos, online=cpus("0-2"))


def shuffled_sparse_machine() -> Topology:
    """CPUs given out of order, non-contiguous NUMA and socket ids, two dies, mixed SMT."""
    infos = (
        CpuInfo(cpu=5, core=0, socket=3, numa=2, die=1),
        CpuInfo(cpu=1, core=0, socket=1, numa=0),
        CpuInfo(cpu=4, core=0, socket=3, numa=2, die=0),
        CpuInfo(cpu=0, core=0, socket=1, numa=0),
        CpuInfo(cpu=2, core=1, socket=1, numa=0),
    )
    return Topology(cpus=infos, online=cpus("0-2,4-5"))
