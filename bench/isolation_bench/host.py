"""The host's quiet-CPU files over the bench's run (``cpuset_lab.quiet_host``): the host-wide
lock held for the whole run (other labs' plugins would journal the quiet cases' writes as
originals), a snapshot first, the disk's IRQs steered to the probe's CPU (``disk_irq``), what
each case changed while its probe ran, each quiet case's changes put back by the plugin before
the next case, and everything put back and checked at the end (printed)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cpuset_lab import quiet_host
from cpuset_lab.quiet_host import Snapshot
from isolation_bench import disk_irq

PUT_BACK_WAIT = 60.0
"""Seconds the plugin has to put a quiet case's files back once its pods are gone, before the
bench says so and puts them back itself (a hang guard, not a figure)."""


def changes(before: Snapshot, now: Snapshot) -> str:
    """What differs, counted by kind: IRQ affinities, the default affinity, idle states, PM
    QoS resume latencies, governors (``"nothing"`` when none)."""
    moved = quiet_host.differences(before, now)
    kinds = {"IRQ affinities": "smp_affinity_list", "default affinity": "default_smp_affinity",
             "idle states": "disable", "resume latencies": "pm_qos_resume_latency_us",
             "governors": "scaling_governor"}
    counts = [f"{sum(p.name == name for p in moved)} {what}" for what, name in kinds.items()
              if any(p.name == name for p in moved)]
    return ", ".join(counts) or "nothing"


class BenchHost:
    """The run's view of the host: ``saved`` (before the run) and ``baseline`` (after the
    disk's IRQs were steered: what every case starts from)."""

    def __init__(self) -> None:
        self.saved: Snapshot = {}
        self.baseline: Snapshot = {}

    @contextmanager
    def held(self) -> Iterator[BenchHost]:
        """The lock held and the snapshot taken; at the end every file put back and the host
        compared with the snapshot, printed."""
        print(f"waiting for the host's quiet-CPU lock ({quiet_host.LOCK})", flush=True)
        with quiet_host.held():
            print(f"host lock held from {time.strftime('%H:%M:%S')}", flush=True)
            self.saved = self.baseline = quiet_host.snapshot()
            try:
                yield self
            finally:
                failed = quiet_host.put_back(self.saved)
                left = quiet_host.differences(self.saved)
                verdict = "as before it" if not left and not failed else "NOT as before it"
                print(f"\nhost after the run: {verdict} ({len(self.saved)} files compared: IRQ "
                      "affinities, default affinity, idle states, resume latencies, governors)")
                for path, (was, now) in sorted(left.items()):
                    print(f"  {path}: {now!r}, was {was!r}")
                for line in failed:
                    print(f"  not put back: {line}")
                print(f"host lock let go at {time.strftime('%H:%M:%S')}", flush=True)

    def steer_disk(self, directory: Path, cpu: int) -> tuple[list[str], list[disk_irq.Refused]]:
        """The IRQs of the disk under ``directory`` steered to ``cpu``: what was done, as lines
        to print, and the IRQs that refused. The baseline is taken after."""
        block = disk_irq.device_dir(directory)
        irqs = disk_irq.irqs_of(block) if block is not None else []
        steered, refused = disk_irq.steer(irqs, str(cpu)) if irqs else ([], [])
        self.baseline = quiet_host.snapshot()
        if not irqs:
            return [f"disk writer's IRQs: none found for {directory} (device {block}); not "
                    "steered: whether they reach the probe's CPU is the machine's choice"], []
        return ([f"disk writer's device {block}: IRQs {', '.join(map(str, irqs))} steered to "
                 f"CPU {cpu}, the probe's under the plugin, so that without quiet CPUs its "
                 "interrupts land there (put back at the end):"]
                + [f"  {s.describe()}" for s in steered]
                + [f"  {r.describe()}" for r in refused]), refused

    def during(self) -> str:
        """What the running case changed from the baseline, now."""
        return changes(self.baseline, quiet_host.snapshot())

    def wait_put_back(self) -> str:
        """Wait until the files are at the baseline again (the plugin's put-back after the
        case's pods went); say how long it took, or put them back and say the plugin did not."""
        began = time.monotonic()
        while quiet_host.differences(self.baseline):
            if time.monotonic() - began > PUT_BACK_WAIT:
                left = changes(self.baseline, quiet_host.snapshot())
                failed = quiet_host.put_back(self.baseline)
                return (f"NOT put back by the plugin within {PUT_BACK_WAIT:.0f} s ({left}); "
                        f"put back by the bench{f', failed: {failed}' if failed else ''}")
            time.sleep(0.05)
        return f"put back by the plugin {time.monotonic() - began:.2f} s after its pods went"
