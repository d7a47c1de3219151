"""What the benchmark measures: the cases of one run, the neighbours beside the probe, and the
sizes (full and ``--quick``). Pure values; ``node.py`` and ``bench/isolation.py`` run them.

A case is the machine the probe finds: neighbours or not, the plugin or not, the plugin's
configuration, and the annotations on the probe's pod. The isolation requests of issue 43 are
cases of their own: the plugin with a request's annotation, in CRI-O's words, on the probe's
pod (the built-in defaults let every namespace ask); the governor's only where cpufreq exists
(:func:`cases`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cpuset_core.quiet_request import CRIO_GOVERNOR, CRIO_IDLE, CRIO_IRQ
from cpuset_lab.pod_spec import QosClass
from isolation_bench.probe import Workload


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One machine the probe runs on, measured in every round."""

    name: str
    what: str
    neighbours: bool
    plugin: bool
    plugin_config: str = ""
    """The plugin's TOML configuration ("": its built-in defaults)."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """On the probe's pod (where an isolation request will go)."""


FLOOR = Case(name="floor", what="the probe alone: no neighbours, no plugin",
             neighbours=False, plugin=False)
NO_PLUGIN = Case(name="no plugin", what="neighbours, no plugin (the kubelet's `none` policy: "
                 "every container on every CPU)", neighbours=True, plugin=False)
PLUGIN_DEFAULTS = Case(name="plugin defaults", what="neighbours, nri-cpuset with its built-in "
                       "defaults (the probe on an exclusive CPU)", neighbours=True, plugin=True)
QUIET_IRQS = Case(name="quiet irqs", what=f"as plugin defaults, the probe's pod asking "
                  f"`{CRIO_IRQ}: disable` (every IRQ and the default affinity off its CPU)",
                  neighbours=True, plugin=True, annotations={CRIO_IRQ: "disable"})
QUIET_IDLE = Case(name="quiet idle", what=f"as plugin defaults, the probe's pod asking "
                  f"`{CRIO_IDLE}: disable` (its CPU's idle states past polling disabled)",
                  neighbours=True, plugin=True, annotations={CRIO_IDLE: "disable"})
QUIET_CPUS = Case(name="quiet CPUs", what="as plugin defaults, the probe's pod asking both",
                  neighbours=True, plugin=True,
                  annotations={CRIO_IRQ: "disable", CRIO_IDLE: "disable"})
GOVERNOR = "performance"
QUIET_FREQ = Case(name="governor", what=f"as plugin defaults, the probe's pod asking "
                  f"`{CRIO_GOVERNOR}: {GOVERNOR}` on its CPU",
                  neighbours=True, plugin=True, annotations={CRIO_GOVERNOR: GOVERNOR})
CASES = (FLOOR, NO_PLUGIN, PLUGIN_DEFAULTS, QUIET_IRQS, QUIET_IDLE, QUIET_CPUS)
"""Every case measured on any machine, in this order in every round."""


def cases(governors: Sequence[str]) -> tuple[tuple[Case, ...], list[str]]:
    """The cases this machine can measure, given the governors its first CPU offers (none
    without cpufreq), and what is not measured here, said why."""
    if GOVERNOR in governors:
        return (*CASES, QUIET_FREQ), []
    why = (f"`{GOVERNOR}` is not among its governors ({', '.join(governors)})" if governors
           else "this machine has no cpufreq (/sys/devices/system/cpu/cpu0/cpufreq)")
    return CASES, [f"{QUIET_FREQ.name} ({QUIET_FREQ.what}): not available here, {why}"]


def check_cases(cases: Sequence[Case]) -> None:
    """Raise ``ValueError`` unless the first case is the floor every ratio is taken against
    (no neighbours, no plugin), names are unique, and annotations or a configuration come only
    with the plugin (without it nothing reads them)."""
    if not cases or cases[0].neighbours or cases[0].plugin:
        raise ValueError("the first case must be the floor: no neighbours, no plugin")
    names = [case.name for case in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"case names repeat: {names}")
    for case in cases:
        if not case.plugin and (case.annotations or case.plugin_config):
            raise ValueError(f"case {case.name!r} has annotations or a plugin configuration "
                             "but no plugin to read them")


@dataclass(frozen=True, slots=True, kw_only=True)
class Neighbour:
    """A container beside the probe: its pod's QoS, its CPU request ("" for none), its command,
    and whether it is given the I/O directory (mounted read-write at ``IO_MOUNT``)."""

    name: str
    qos: QosClass
    cpu_request: str
    command: tuple[str, ...]
    io: bool = False


IO_MOUNT = "/io"
SPIN = ("/bin/sh", "-c", "while :; do :; done")
# Direct 4 KiB writes: each one a request to the disk and an interrupt when it completes (no
# page cache to absorb them). The same 1 MiB is rewritten: nothing fills up.
DISK_IO = ("/bin/sh", "-c", f"while :; do /bin/busybox dd if=/dev/zero of={IO_MOUNT}/load "
           "bs=4k count=256 oflag=direct conv=notrunc 2>/dev/null; done")


def neighbours(spinners: int) -> tuple[Neighbour, ...]:
    """``spinners`` spinning containers, BestEffort and Burstable weighted like a 1-CPU request
    (shares 1024, no quota) in turn, and one disk writer (Burstable, 100m) as the interrupt
    source."""
    spinning = tuple(
        Neighbour(name=f"spin-{n}", qos=QosClass.BEST_EFFORT, cpu_request="", command=SPIN)
        if n % 2 == 0 else
        Neighbour(name=f"spin-{n}", qos=QosClass.BURSTABLE, cpu_request="1", command=SPIN)
        for n in range(spinners))
    return (*spinning, Neighbour(name="disk-io", qos=QosClass.BURSTABLE, cpu_request="100m",
                                 command=DISK_IO, io=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizes:
    """How much one run measures."""

    workload: Workload
    spinners: int
    rounds: int


# 500 µs of work in each 1 ms period: the probe needs its CPU half the time, so the neighbours
# it shares a CPU with cost it time (a mostly sleeping probe preempts them and shows nothing,
# docs/performance.md).
FULL = Sizes(workload=Workload(periods=20_000, period_us=1000, work_us=500, job_ms=3000),
             spinners=4, rounds=2)
QUICK = Sizes(workload=Workload(periods=2000, period_us=1000, work_us=500, job_ms=300),
              spinners=2, rounds=1)
