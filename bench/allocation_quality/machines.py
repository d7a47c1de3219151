"""The machine shapes the benchmark runs on: every one, and the few of ``--quick``."""

from __future__ import annotations

from dataclasses import dataclass

from cpuset_cli.placement_quality import Domains
from cpuset_core import Topology
from cpuset_lab.machines import (
    BIG_1024,
    DUAL_SOCKET_HT,
    EPYC_LIKE,
    INTEL_112,
    OFFLINE_ISOLATED,
    MachineShape,
)


@dataclass(frozen=True, slots=True)
class Machine:
    name: str
    shape: MachineShape
    note: str


MACHINES = (
    Machine("DUAL_SOCKET_HT", DUAL_SOCKET_HT, "sysfs fixture"),
    Machine("EPYC_LIKE", EPYC_LIKE, "sysfs fixture"),
    Machine("OFFLINE_ISOLATED", OFFLINE_ISOLATED, "sysfs fixture; CPU 7 offline, 2-3 isolated"),
    Machine("INTEL_112", INTEL_112, "2-socket Xeon"),
    # machines.EPYC_NPS4_256 has L3 groups of 8 cores (16 CPUs); the EPYC has 8 CPUs
    # (4 cores, a Zen 2 CCX) per L3 group: 4 L3 groups per NPS4 node.
    Machine("EPYC_NPS4_256/L3=8", MachineShape(sockets=2, numa_per_socket=4, cores_per_numa=16,
                                               threads_per_core=2, l3_per_numa=4),
            "2-socket EPYC NPS4, L3 groups of 8 CPUs"),
    Machine("XEON_384", MachineShape(sockets=2, numa_per_socket=2, cores_per_numa=48,
                                     threads_per_core=2),
            "2 sockets × 2 NUMA (SNC2) × 48 cores × 2 threads"),
    Machine("ARM_80", MachineShape(sockets=1, numa_per_socket=1, cores_per_numa=80,
                                   threads_per_core=1),
            "80 cores, no SMT, one NUMA node"),
    Machine("BIG_1024", BIG_1024, "2 sockets × 8 NUMA × 32 cores × 2 threads"),
)
QUICK_MACHINES = ("DUAL_SOCKET_HT", "EPYC_NPS4_256/L3=8", "BIG_1024")


def describe(topology: Topology) -> str:
    d = Domains(topology)
    return (f"{len(topology.online)} online CPUs, {len(topology.sockets)} socket(s), "
            f"{len(d.numa)} NUMA node(s), {len(d.l3)} L3 group(s), "
            f"{d.threads_per_core} thread(s)/core")
