"""Quiet CPUs with irqbalance running in the guest (issue 43): Debian's irqbalance 1.9.2 (the
binary ``scripts/install-irqbalance`` unpacks without its service; ``scripts/vm-test`` runs it
first) rebalances every 10 s and would put interrupts back on a quiet CPU unless told to leave
it alone. A quiet pod's CPU must stay quiet across its rounds (every IRQ's affinity sampled
throughout), and an interrupt moved back onto it (written as irqbalance writes it, and by an
irqbalance restarted with its bans forgotten) must be repaired by the plugin's verifier.

The guest is its own machine: irqbalance here moves only the guest's interrupts. It is stopped,
and the guest's affinities put back as they were before it started, at the end.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_lab import quiet_host
from cpuset_lab.quiet_host import Snapshot
from tests.vm import quiet
from tests.vm.quiet_pods import PATIENCE, Record, note, quiet_pod
from tests.vm.runtime import RESULTS, SCALE, Guest, Pods, wait_until

IRQBALANCE = Path(os.environ.get("NRI_CPUSET_LAB", "/var/lib/nri-cpuset-lab"),
                  "irqbalance/usr/sbin/irqbalance")
RUN_DIR = Path("/run/irqbalance")
"""Where 1.9.2 binds its socket when the directory exists (its unit's ``RuntimeDirectory``);
without it, an abstract name no client can address, and the plugin cannot tell it."""
INTERVAL = 10.0
"""irqbalance's rebalancing period (its default ``--interval``), in the guest's seconds."""
ROUNDS = 4


class Irqbalance:
    """``irqbalance --foreground --debug`` as a child, its output in the results."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen([str(IRQBALANCE), "--foreground", "--debug"],
                                            stdout=out, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30 * SCALE)
        self.process = None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@pytest.fixture
def irqbalance(facts: tuple[Snapshot, list[Path]]) -> Iterator[Irqbalance]:
    if not IRQBALANCE.exists():
        pytest.skip(f"no irqbalance at {IRQBALANCE}: bash scripts/install-irqbalance "
                    f"(scripts/vm-test runs it before the guest boots)")
    saved, _ = facts
    made = not RUN_DIR.exists()
    RUN_DIR.mkdir(exist_ok=True)  # as its unit would: the guest's /run is its own tmpfs
    running = Irqbalance(RESULTS / "irqbalance.log")
    running.start()
    try:
        yield running
    finally:
        running.stop()
        if made:
            RUN_DIR.rmdir()
        # irqbalance's own moves are nobody's to put back but the test's.
        assert not quiet_host.put_back(saved)


@pytest.fixture
def facts() -> tuple[Snapshot, list[Path]]:
    if not quiet.writable():
        pytest.fail("the guest's /proc/irq is not writable", pytrace=False)
    return quiet.guest_facts()


def watch(cpu: int, irqs: list[Path], seconds: float) -> list[str]:
    """Sample every IRQ's affinity for ``seconds`` (guest monotonic): each sample that found
    one allowed on ``cpu``, with when and which."""
    bad = []
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < seconds:
        if on := quiet.on_cpu(cpu, irqs):
            bad.append(f"{elapsed:.1f} s: IRQ(s) {on} on CPU {cpu}")
        time.sleep(0.2)
    return bad


def banned(irqbalance: Irqbalance, cpu: int, since: int) -> None:
    """Wait until irqbalance's own output past byte ``since`` says it bans ``cpu`` (its
    ``--debug`` prints ``Banned CPUs: <mask>`` at its start and again once told), noted."""
    def masks() -> list[int]:
        text = irqbalance.log.read_bytes()[since:].decode(errors="replace")
        return [int(line.split(":")[1].strip().replace(",", ""), 16)
                for line in text.splitlines() if line.startswith("Banned CPUs:")]

    wait_until(lambda: any(mask >> cpu & 1 for mask in masks()),
               lambda: f"irqbalance to ban CPU {cpu}: its masks {masks()}", PATIENCE)
    note(f"irqbalance says it bans CPU {cpu}: Banned CPUs masks {[hex(m) for m in masks()]}")


def repaired_after(cpu: int, irqs: list[Path], since: float) -> float:
    """Seconds from ``since`` until ``cpu`` is quiet again (hang guard: PATIENCE)."""
    return quiet.first_quiet(cpu, irqs, since, PATIENCE * SCALE)


def test_a_quiet_cpu_stays_quiet_across_irqbalances_rounds_and_is_repaired(
        guest: Guest, pods: Pods, facts: tuple[Snapshot, list[Path]], irqbalance: Irqbalance,
        record_testsuite_property: Record) -> None:
    _, irqs = facts
    time.sleep(INTERVAL)  # its first placement done before the pod arrives
    assert irqbalance.running(), (RESULTS / "irqbalance.log").read_text()[-2000:]
    with quiet_pod(guest, pods, irqs, record_testsuite_property, "irqbalance") as (_, cpu):
        bad = watch(cpu, irqs, ROUNDS * INTERVAL)
        note(f"irqbalance: {ROUNDS} rounds ({ROUNDS * INTERVAL:.0f} s) watched, "
             f"{len(bad)} sample(s) with an IRQ on quiet CPU {cpu}: {bad[:5]}")
        assert not bad, bad
        banned(irqbalance, cpu, 0)  # the plugin told it (the pass logs counts, not what)

        # An interrupt moved back as irqbalance moves it: the verifier's repair.
        victim = irqs[0]
        moved = time.monotonic()
        victim.write_text(str(cpu))  # one write, as irqbalance's
        seconds = repaired_after(cpu, irqs, moved)
        record_testsuite_property("irq_repaired_after_s", f"{seconds:.2f}")
        note(f"IRQ {quiet.number(victim)} written onto quiet CPU {cpu}: repaired "
             f"{seconds:.2f} s later")

        # irqbalance restarted (its bans forgotten): told again, or repaired.
        irqbalance.stop()
        since = irqbalance.log.stat().st_size
        irqbalance.start()
        bad = watch(cpu, irqs, 2 * INTERVAL)
        repaired_after(cpu, irqs, time.monotonic())
        note(f"irqbalance restarted: {len(bad)} sample(s) with an IRQ on CPU {cpu} in "
             f"{2 * INTERVAL:.0f} s, quiet again after: {bad[:5]}")
        banned(irqbalance, cpu, since)
