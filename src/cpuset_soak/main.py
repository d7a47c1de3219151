"""A chaos soak on the real runtime: a seeded random walk of pod operations and faults against
the lab's containerd with NRI and ``nri-cpuset run``, checking invariants read from the kernel
(cgroup cpusets, ``/proc/PID/status``) against an independent model of who should own what.

Operations (weighted like a busy node, bounded by its capacity): shared, BestEffort, integer
and pinned pods (valid, overlapping, over integer containers, invalid, offline CPUs), pods with
init containers and sidecars, deletion, stop without remove, in-place resize, CRI
``--cpuset-cpus`` on shared containers, out-of-band cgroup writes. Faults: the plugin killed -9
(also mid-burst), SIGSTOPped past the NRI request timeout, containerd restarted, runc refusing
updates, a reload narrowing who may pin, a reader hammering the status socket, and with
``--hotplug`` (root on cgroup v2: a VM lab guest) CPUs taken offline and back.

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
from pathlib import Path

from cpuset_core.cpuset import CPUSet
from cpuset_lab.cgroups import online_cpus
from cpuset_lab.containerd_install import Installation, LabError, find_installation
from cpuset_soak import history, hotplug, report
from cpuset_soak.history import Header, HistoryWriter, Op
from cpuset_soak.model import Node
from cpuset_soak.node import LabNode
from cpuset_soak.runner import Soak, Violated
from cpuset_soak.walk import WEIGHTS, Walk

RUNTIMES = {"1.7": "1.7.", "2.x": "2."}
"""``--runtime`` → the version prefix its installation must report."""
RUNTIME_ENV = "NRI_CPUSET_RUNTIME"


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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cpuset_soak",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="walk this long (default 3)")
    parser.add_argument("--seed", type=int, default=None, help="default: from the clock")
    parser.add_argument("--runtime", choices=sorted(RUNTIMES), default=None,
                        help="containerd to run (default 1.7, or the replayed history's)")
    parser.add_argument("--replay", type=Path, default=None, metavar="FILE",
                        help="run the operations of a history.jsonl instead of a walk")
    parser.add_argument("--verify-period", type=int, default=2,
                        help="the plugin's runtime.verify_period (s); settling waits on it")
    parser.add_argument("--reserved", type=CPUSet.parse, default=CPUSet(),
                        help="the plugin's cpus.reserved (default: its default, none)")
    parser.add_argument("--if-available", action="store_true",
                        help="exit 0, saying so, when the runtime is not installed")
    parser.add_argument("--hotplug", action="store_true",
                        help="take CPUs offline and back (root, cgroup v2; never CPU 0)")
    parser.add_argument("--time-scale", type=_scale, default=1.0, metavar="F",
                        help="every wait F times longer (an emulated VM lab guest: 8)")
    parser.add_argument("--without", type=_kinds, default=frozenset(), metavar="KIND,...",
                        help=f"operations and faults the walk never draws ({', '.join(WEIGHTS)})")
    parser.add_argument("--keep", action="store_true", help="keep the run's directory")
    return parser.parse_args(argv)


def _kinds(text: str) -> frozenset[str]:
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    if unknown := sorted(kinds - set(WEIGHTS)):
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(unknown)} (known: "
                                         f"{', '.join(WEIGHTS)})")
    return kinds


def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be from 1 to 100, got {text}")
    return value


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


def main(argv: list[str] | None = None) -> int:  # noqa: PLR0915 - one flow, read top down
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("soak: needs root (it runs containerd)", file=sys.stderr)
        return 2
    replayed: list[list[Op]] | None = None
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    runtime = args.runtime or "1.7"
    if args.replay is not None:
        try:
            header, steps = history.read(args.replay)
        except (OSError, history.HistoryError) as err:
            print(f"soak: cannot replay: {err}", file=sys.stderr)
            return 2
        seed, runtime = header.seed, args.runtime or header.runtime
        replayed = [step.ops for step in steps]
    try:
        installation = installation_for(runtime)
    except LabError as err:
        print(f"soak: {err}", file=sys.stderr)
        if args.if_available:
            print(f"soak: containerd {runtime} not available here; skipped")
            return 0
        return 2
    machine = _machine(hotplugging=args.hotplug)
    if machine is None:
        return 2
    online, offlinable = machine
    # Stopped by SIGTERM (CI's timeout, kill), the soak still removes its pods and runtime:
    # SystemExit runs the ``finally`` below, which the default action would skip.
    signal.signal(signal.SIGTERM, _terminated)
    workdir = Path(tempfile.mkdtemp(prefix="nri-soak-"))
    model = Node(online=online, reserved=args.reserved)
    node = LabNode(workdir, installation, model, verify_period=args.verify_period,
                   scale=args.time_scale)
    print(f"soak: seed {seed}, containerd {installation.version()} ({runtime}), online "
          f"{online}, {'replaying ' + str(args.replay) if replayed else f'{args.minutes} min'}"
          f", reserved {args.reserved.format() or 'none'}, verify_period "
          f"{args.verify_period} s, hotplug {offlinable.format() or 'off'}, history "
          f"{workdir}/history.jsonl",
          flush=True)
    started = time.monotonic()
    failed = False
    with (workdir / "history.jsonl").open("w", encoding="utf-8") as out:
        soak = Soak(node, seed, HistoryWriter(out, Header(seed, runtime, online.format(),
                                                          args.minutes)))
        soak.offlinable = offlinable
        try:
            node.start()
            # The walk's minutes start once the node is up (an emulated guest's containerd
            # and plugin take a minute or more to start).
            deadline = None if replayed is not None else time.monotonic() + args.minutes * 60
            soak.run(replayed if replayed is not None
                     else walked(Walk(seed, model, hotplug=offlinable,
                                      without=args.without)), deadline)
            soak.finish()
        except Violated:
            failed = True
        except Exception:  # noqa: BLE001 - the soak's own failure: report it with the history
            failed = True
            traceback.print_exc()
            print("--- the last 30 operations and outcomes:")
            print("\n".join(soak.recent))
            soak.tally.violations.append("the soak itself failed (above)")
        finally:
            hotplug.restore(soak.taken)
            node.close()
    minutes = (time.monotonic() - started) / 60
    for line in report.summary(soak.tally):
        print(line)
    if failed or args.keep:
        print(f"soak: run directory kept: {workdir} (history.jsonl, plugin.log, lab/)")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(report.closing(soak.tally, minutes, seed, soak.step), flush=True)
    return 1 if failed else 0
