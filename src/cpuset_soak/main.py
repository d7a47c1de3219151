"""A chaos soak on the real runtime: a seeded random walk of pod operations and faults against
the lab's containerd with NRI and ``nri-cpuset run``, checking invariants read from the kernel
(cgroup cpusets, ``/proc/PID/status``) against an independent model of who should own what.

Operations (weighted like a busy node, bounded by its capacity): shared, BestEffort, integer
and pinned pods (valid, overlapping, over integer containers, invalid, offline CPUs), pods with
init containers and sidecars, deletion, stop without remove, in-place resize, CRI
``--cpuset-cpus`` on shared containers, out-of-band cgroup writes, and containers that never
run: pods whose start fails (retried beside their last dead instance after a back-off, as the
kubelet does) and containers created and never started (started within the plugin's start
grace, after it, or their pod deleted). Faults: the plugin killed -9
(also mid-burst), SIGSTOPped past the NRI request timeout, containerd restarted, runc refusing
updates, a reload narrowing who may pin, a reader hammering the status socket, and with
``--hotplug`` (root on cgroup v2: a VM lab guest) CPUs taken offline and back. Pods asking
for quiet CPUs (interrupts, idle states: CRI-O's keys and this project's) are walked too, the
host's lock (``cpuset_lab.quiet_host.held``) held for the whole walk and the host checked
against its snapshot (``quiet_invariant``); ``--without quiet`` skips them.

Every step is written to ``history.jsonl`` in the run's directory (kept when a violation is
found, with the plugin's and containerd's logs); ``--replay FILE`` runs the same operations.
Exits 1 on any violation, 2 when it cannot run; the last line counts operations, faults by
kind, checks and violations.

Run: ``nox -s soak -- --minutes 10`` or ``python -m cpuset_soak [--minutes M] [--seed S]
[--runtime 1.7|2.x] [--replay FILE] [--hotplug] [--time-scale F]`` (root;
``scripts/install-containerd`` first).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cpuset_core.cpuset import CPUSet
from cpuset_lab import quiet_host
from cpuset_lab.cgroups import online_cpus
from cpuset_lab.containerd_install import Installation, LabError, find_installation

from . import history, hotplug, report
from .args import RUNTIMES, parse_args
from .history import Header, HistoryWriter, Op
from .hotplug import Offlining
from .model import Node
from .node import LabNode
from .parts import Model, Pace
from .quiet_watch import QuietWatch
from .record import Record
from .runner import Soak, Violated
from .walk import Walk

RUNTIME_ENV = "NRI_CPUSET_RUNTIME"


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run does: a walk from ``seed``, or the steps of a history again (``replayed``)."""

    seed: int
    runtime: str
    replayed: list[list[Op]] | None = None


def planned(args: argparse.Namespace) -> Plan:
    """The run ``args`` ask for; with ``--replay``, the history's seed, runtime (unless
    ``--runtime`` says otherwise) and steps. ``OSError`` or ``history.HistoryError`` when the
    history cannot be read."""
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    runtime = args.runtime or "1.7"
    if args.replay is None:
        return Plan(seed, runtime)
    header, steps = history.read(args.replay)
    return Plan(header.seed, args.runtime or header.runtime, [step.ops for step in steps])


def installation_for(runtime: str) -> Installation:
    """The lab's containerd for ``runtime``, chosen through ``NRI_CPUSET_RUNTIME`` (the lab's
    contract); ``LabError`` when it is not installed or the lab gives another version."""
    os.environ[RUNTIME_ENV] = runtime
    installation = find_installation()
    version = installation.version()
    if not version.startswith(RUNTIMES[runtime]):
        raise LabError(f"--runtime {runtime}: the lab's containerd is {version or 'unknown'} "
                       f"(this lab does not select containerd {runtime} through "
                       f"{RUNTIME_ENV}={runtime}, or it is not installed)")
    return installation


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def walked(walk: Walk) -> Iterator[list[Op]]:
    while True:
        yield walk.step()


def _machine(*, hotplugging: bool) -> tuple[CPUSet, CPUSet] | None:
    """The online CPUs and those the walk may take offline; None (said why) when the soak
    cannot run here."""
    online = online_cpus()
    if len(online) < 2:
        print("soak: needs two online CPUs (a pin must leave a shared pool)", file=sys.stderr)
        return None
    if not hotplugging:
        return online, CPUSet()
    try:
        return online, hotplug.usable_cpus(online,
                                           cgroup_version=hotplug.machine_cgroup_version())
    except hotplug.HotplugUnavailable as err:
        print(f"soak: {err}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    """Exit status: 0 without a violation, 1 with one, 2 when the soak cannot run here."""
    args = parse_args(argv, (__doc__ or "").splitlines()[0])
    if os.geteuid() != 0:
        print("soak: needs root (it runs containerd)", file=sys.stderr)
        return 2
    try:
        plan = planned(args)
    except (OSError, history.HistoryError) as err:
        print(f"soak: cannot replay: {err}", file=sys.stderr)
        return 2
    try:
        installation = installation_for(plan.runtime)
    except LabError as err:
        print(f"soak: {err}", file=sys.stderr)
        if args.if_available:
            print(f"soak: containerd {plan.runtime} not available here; skipped")
            return 0
        return 2
    machine = _machine(hotplugging=args.hotplug)
    if machine is None:
        return 2
    # Stopped by SIGTERM (CI's timeout, kill), the soak still removes its pods and runtime:
    # SystemExit runs the ``finally`` of ``_walk``, which the default action would skip.
    signal.signal(signal.SIGTERM, _terminated)
    return _soak(args, plan, installation, *machine)


def _soak(args: argparse.Namespace, plan: Plan, installation: Installation, online: CPUSet,
          offlinable: CPUSet) -> int:
    """One run in a fresh directory: the walk, its summary and closing line."""
    workdir = Path(tempfile.mkdtemp(prefix="nri-soak-"))
    pace = Pace(args.time_scale)
    model = Model(Node(online=online, reserved=args.reserved, grace=pace.grace()))
    quiet = "create-quiet-request" not in args.without and quiet_host.writable()
    node = LabNode(workdir, installation, reserved=args.reserved,
                   strict_reservation=model.node.strict_reservation,
                   verify_period=args.verify_period, pace=pace, quiet=quiet)
    print(f"soak: seed {plan.seed}, containerd {installation.version()} ({plan.runtime}), "
          f"online {online}, "
          f"{'replaying ' + str(args.replay) if plan.replayed else f'{args.minutes} min'}"
          f", reserved {args.reserved.format() or 'none'}, verify_period "
          f"{args.verify_period} s, start_grace {pace.start_grace} s, hotplug "
          f"{offlinable.format() or 'off'}, history "
          f"{workdir}/history.jsonl",
          flush=True)
    started = time.monotonic()
    record = Record()
    with (workdir / "history.jsonl").open("w", encoding="utf-8") as out, _host(quiet) as watch:
        soak = Soak(node, model, record,
                    HistoryWriter(out, Header(plan.seed, plan.runtime, online.format(),
                                              args.minutes)),
                    seed=plan.seed, cpus=Offlining(offlinable), quiet=watch)
        failed = _walk(soak, plan, args)
    minutes = (time.monotonic() - started) / 60
    for line in report.summary(record.tally):
        print(line)
    if failed or args.keep:
        print(f"soak: run directory kept: {workdir} (history.jsonl, plugin.log, lab/)")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(report.closing(record.tally, minutes, plan.seed, record.step), flush=True)
    return 1 if failed else 0


@contextmanager
def _host(quiet: bool) -> Iterator[QuietWatch | None]:
    """The host's quiet-CPU files to this soak alone while it walks quiet requests (they are
    the machine's, not the lab's), snapshot first; None when it does not walk them."""
    if not quiet:
        print("soak: quiet CPUs not walked (--without quiet, or /proc/irq not writable)")
        yield None
        return
    print(f"soak: waiting for the host's quiet-CPU lock {quiet_host.LOCK}", flush=True)
    with quiet_host.held():
        print(f"soak: host lock held from {time.strftime('%H:%M:%S')}", flush=True)
        watch = QuietWatch()
        print(f"soak: {watch.describe()}", flush=True)
        try:
            yield watch
        finally:
            for line in watch.put_back():
                print(f"soak: {line}")
            print(f"soak: host lock let go at {time.strftime('%H:%M:%S')}", flush=True)


def _walk(soak: Soak, plan: Plan, args: argparse.Namespace) -> bool:
    """Start the node, run the walk (or the replay) and the end's check; whether it failed.
    The CPUs taken offline come back and the node is closed whatever happens."""
    try:
        soak.node.start(soak.model.node.namespaces)
        # The walk's minutes start once the node is up (an emulated guest's containerd
        # and plugin take a minute or more to start).
        deadline = None if plan.replayed is not None else time.monotonic() + args.minutes * 60
        soak.run(plan.replayed if plan.replayed is not None
                 else walked(Walk(plan.seed, soak.model.node,
                                  hotplug=soak.parts.cpus.offlinable,
                                  without=args.without)), deadline)
        soak.finish()
    except Violated:
        return True
    except Exception:  # noqa: BLE001 - the soak's own failure: report it with the history
        traceback.print_exc()
        print("--- the last 30 operations and outcomes:")
        print("\n".join(soak.record.recent))
        soak.record.tally.violations.append("the soak itself failed (above)")
        return True
    finally:
        hotplug.restore(soak.parts.cpus)
        soak.node.close()
    return False
