"""What an exclusive CPU buys the workload (issue 43, part 1): a Guaranteed 1-CPU container doing
what latency-critical pods do, on the real containerd, with and without neighbours and the
plugin (needs root and ``scripts/install-containerd``; ``NRI_CPUSET_RUNTIME=2.x`` for 2.1).

The probe (``bench/probes/dutycycle.c``, built static at bench time and bind-mounted read-only
into the lab's busybox container) runs SCHED_OTHER, as a pod's threads do:

- a duty cycle: it wakes on absolute 1 ms deadlines, works 500 µs of each period (a loop count
  calibrated once, on the idle machine, so every case does the same work) and records how late
  the work finished past deadline + 500 µs: p50, p99, p99.9 and max over every period
  (20 000; 2 000 with ``--quick``); work ending past the next deadline skips it (counted);
- a fixed CPU-bound job (3 s of loops on the idle machine; 0.3 s with ``--quick``), timed.

Beside it (except in the floor): N spinning containers (4; 2 with ``--quick``), BestEffort and
Burstable weighted like a 1-CPU request (shares 1024, no quota) in turn, and a disk writer
(``dd oflag=direct`` to a host directory) as the interrupt source. While a case runs, the
pods' cgroups and the QoS tiers above them carry a kubelet's weights (``isolation_bench/
weights.py``; the lab leaves them at the kernel's default). The cases, in this order in
every round: the floor (the probe alone, no plugin), no plugin (the kubelet's ``none`` policy),
the plugin's built-in defaults, then the plugin with each isolation request on the probe's pod
in CRI-O's words: interrupts off (``irq-load-balancing.crio.io: disable``), idle states off
(``cpu-c-states.crio.io: disable``), both ("quiet CPUs"), and a governor
(``cpu-freq-governor.crio.io: performance``) only where cpufreq offers it (else printed as not
available here).

The host's interrupts and idle states are the machine's: the bench holds the host-wide lock
(``cpuset_lab.quiet_host.held``) for its whole run, snapshots them first, and at the end puts
back and compares (printed). The disk writer's IRQs are steered to the CPU the plugin gives the
probe (found by a short probe run first; ``isolation_bench/disk_irq.py`` says why), printed.
After each case: what it changed on the host while the probe ran, and how long the plugin took
to put it back once its pods went.

Prints, per round, a table: the lateness percentiles, the job's time, deadlines skipped,
involuntary context switches, the probe's CPUs and the device interrupts they took per second;
then each figure's ratio to the floor, then each case's host notes. Nothing is asserted.

Run: ``nox -s bench-isolation`` or ``python bench/isolation.py [--quick] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from isolation_bench import interrupts, probe
from isolation_bench.cases import (
    FLOOR,
    FULL,
    PLUGIN_DEFAULTS,
    QUICK,
    Case,
    Sizes,
    cases,
    check_cases,
    neighbours,
)
from isolation_bench.host import BenchHost
from isolation_bench.node import IsolationNode
from isolation_bench.probe import Calibration, Workload
from isolation_bench.stats import Lateness
from isolation_bench.table import CaseResult, table

from cpuset_core.cpuset import CPUSet
from cpuset_lab.cgroups import online_cpus
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.quiet_host import writable

SLACK = 10.0
"""How many times its work's length a probe run may take before it counts as hung (a loaded
machine slows it, a hang must still end the bench)."""


def measure(node: IsolationNode, case: Case, sizes: Sizes, calibration: Calibration,
            host: BenchHost) -> tuple[CaseResult, str]:
    """One case: its plugin and neighbours, the probe run, all of it cleared after (the host's
    files put back by the plugin before it stops); its result, and what it did to the host."""
    plugin = node.start_plugin(case) if case.plugin else None
    put_back = ""
    try:
        if case.neighbours:
            node.start_neighbours(neighbours(sizes.spinners))
        work = sizes.workload
        nominal = work.periods * work.period_us / 1e6 + work.job_ms / 1e3
        output = node.run_probe(case, work.command(calibration),
                                (60 + SLACK * nominal) * node.scale, sample=host.during)
    finally:
        node.clear()
        put_back = host.wait_put_back()
        if plugin is not None:
            plugin.stop()
    run = probe.parse_run(output.lines)
    taken = interrupts.taken(output.irqs_before, output.irqs_after, run.cpus)
    result = CaseResult(case=case, lateness=Lateness.from_ns(run.late_ns),
                        job_ms=run.job_ns / 1e6, skipped=run.skipped,
                        switches=run.duty_switches + run.job_switches,
                        cpus=CPUSet(run.cpus).format(), irqs_per_s=taken / output.seconds)
    return result, f"  {case.name}: host while the probe ran: {output.sampled}; {put_back}"


def exclusive_cpu(node: IsolationNode, sizes: Sizes, calibration: Calibration,
                  config: str = "") -> int:
    """The CPU the plugin (``config``: its TOML, "" its defaults) gives the probe beside its
    neighbours (a short probe)."""
    plugin = node.start_plugin(replace(PLUGIN_DEFAULTS, plugin_config=config))
    try:
        node.start_neighbours(neighbours(sizes.spinners))
        tiny = Workload(periods=10, period_us=1000, work_us=1, job_ms=1)
        output = node.run_probe(PLUGIN_DEFAULTS, tiny.command(calibration), 60 * node.scale)
    finally:
        node.clear()
        plugin.stop()
    return min(probe.parse_run(output.lines).cpus)


def arrange_disk(node: IsolationNode, host: BenchHost, sizes: Sizes,
                 calibration: Calibration) -> str:
    """The disk writer's interrupts made able to land on the probe's CPU, printed: its IRQs
    steered there; where one refuses (a kernel-managed vector) and is delivered on one other
    CPU, the probe brought there instead by reserving every other CPU (``cpus.reserved``,
    not strict: the shared pool keeps them, so the neighbours still run beside it, as under
    the defaults). Returns the plugin cases' configuration ("" for the defaults)."""
    cpu = exclusive_cpu(node, sizes, calibration)
    lines, refused = host.steer_disk(node.io_dir, cpu)
    print("\n".join(lines))
    delivered = {r.delivered for r in refused}
    if len(delivered) != 1 or str(cpu) in delivered:
        return ""
    target = CPUSet.parse(delivered.pop())
    config = f'[cpus]\nreserved = "{(online_cpus() - target).format()}"\n'
    got = exclusive_cpu(node, sizes, calibration, config)
    print(f"  the plugin's cases run with {config.strip()!r} so that the probe's exclusive CPU "
          f"is {target} (it got CPU {got}), where the refusing IRQ is delivered; their names "
          "say 'plugin defaults' for the rest; the IRQs that move follow it:")
    print("\n".join(host.steer_disk(node.io_dir, got)[0]))
    return config


def calibrate(node: IsolationNode) -> Calibration:
    """The work loops per millisecond, measured in the floor's setting (the probe alone)."""
    try:
        output = node.run_probe(FLOOR, probe.CALIBRATE_COMMAND, 120 * node.scale)
    finally:
        node.clear()
    return probe.parse_calibration(output.lines)


def sizes_from(args: argparse.Namespace) -> Sizes:
    base = QUICK if args.quick else FULL
    work: Workload = base.workload
    if args.periods is not None:
        work = replace(work, periods=args.periods)
    return replace(base, workload=work,
                   spinners=args.spinners if args.spinners is not None else base.spinners,
                   rounds=args.rounds if args.rounds is not None else base.rounds)


def describe(lab: LabContainerd, sizes: Sizes, calibration: Calibration, workdir: Path,
             load: str, *, measured: tuple[tuple[Case, ...], list[str]]) -> None:
    """What the run measures, printed before its tables."""
    work = sizes.workload
    print(f"machine load before the run (/proc/loadavg: 1, 5, 15 min): {load} (a quiet "
          "machine's is near 0; processes outside the pods run on the probe's CPUs too)")
    print(f"isolation bench on containerd {lab.runtime.name}, {len(online_cpus())} CPUs; "
          f"probe: {work.work_us} µs of work every {work.period_us} µs, {work.periods} periods, "
          f"SCHED_OTHER, Guaranteed 1 CPU; job {work.job_ms} ms on the idle machine "
          f"({calibration.loops_per_ms} loops/ms)")
    print(f"neighbours: {sizes.spinners} spinning (BestEffort and Burstable 1-CPU weighted in "
          f"turn) and a disk writer (dd oflag=direct, 4 KiB) under {workdir}")
    for case in measured[0]:
        print(f"  {case.name}: {case.what}")
    for line in measured[1]:
        print(f"  not measured: {line}")
    print("lateness = when the period's work finished - (deadline + work); skipped = deadlines "
          "passed while working; inv. cs = involuntary context switches; dev irq/s = device "
          "interrupts on the probe's CPUs", flush=True)


def positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def slower(text: str) -> float:
    """A time scale: how many times slower than this host (1 or more)."""
    value = float(text)
    if not value >= 1.0:  # NaN too
        raise argparse.ArgumentTypeError(f"{text} is not a time scale (1 or more)")
    return value


def cannot_run_here() -> str | None:
    if os.geteuid() != 0:
        return "needs root (it runs containerd)"
    if len(online_cpus()) < 2:
        return "needs two online CPUs (an exclusive CPU must leave a shared one)"
    if not writable():
        return "needs a writable /proc/irq (its quiet cases move interrupts)"
    return None


def governors() -> list[str]:
    """The governors the first CPU offers (none without cpufreq)."""
    offered = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors")
    return offered.read_text().split() if offered.is_file() else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 000 periods, a 0.3 s job, 2 spinners, 1 round (a smoke run)")
    parser.add_argument("--periods", type=positive, default=None)
    parser.add_argument("--spinners", type=int, default=None, choices=range(9),
                        metavar="0..8")
    parser.add_argument("--rounds", type=positive, default=None)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where its containerd, the probe's build and the disk writer's "
                             "directory go (default: a new directory in /var/tmp, removed "
                             "after); the VM lab gives a tmpfs with a disk mounted at io/")
    parser.add_argument("--time-scale", type=slower, default=1.0,
                        help="how much slower than this host the machine is: every wait is "
                             "multiplied by it (the VM lab's emulated guest: 8)")
    args = parser.parse_args()
    if (why := cannot_run_here()) is not None:
        print(why, file=sys.stderr)
        return 2
    sizes = sizes_from(args)
    measured = cases(governors())
    check_cases(measured[0])
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    scale: float = args.time_scale
    with (contextlib.nullcontext(str(args.workdir)) if args.workdir is not None
          else tempfile.TemporaryDirectory(prefix="nri-isolation-", dir="/var/tmp") as tmp,
          BenchHost().held() as host):
        workdir = Path(tmp)
        probe_dir = probe.build(workdir / "build").parent
        # A slower machine (an emulated guest) takes longer to start and answer everything.
        lab = LabContainerd(workdir / "lab", installation=find_installation(),
                            start_timeout=30 * scale, request_timeout=f"{max(2, int(scale))}s",
                            registration_timeout=f"{int(5 * scale)}s")
        try:
            lab.start()
            lab.import_image()
            node = IsolationNode(lab, workdir, probe_dir, scale=scale)
            calibration = calibrate(node)
            describe(lab, sizes, calibration, workdir, load, measured=measured)
            config = arrange_disk(node, host, sizes, calibration)
            run = [replace(case, plugin_config=config) if case.plugin else case
                   for case in measured[0]]
            for n in range(sizes.rounds):
                results = [measure(node, case, sizes, calibration, host) for case in run]
                print(f"\n== round {n + 1} of {sizes.rounds}")
                print("\n".join(table([result for result, _ in results])))
                print("on the host:")
                print("\n".join(note for _, note in results), flush=True)
        finally:
            lab.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
