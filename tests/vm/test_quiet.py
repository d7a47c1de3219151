"""Quiet CPUs (issue 43) on the guest's real kernel: a Guaranteed pod asking in CRI-O's words
gets every IRQ that accepts it (virtio, the NVMe controllers' admin vectors) and the default
affinity off its exclusive CPU, and its idle states past polling disabled where the guest has
cpuidle; the NVMe queue vectors, which the kernel manages (a write answers EIO), are skipped and
named in the plugin's log. Everything comes back when the pod goes, also when the plugin was
killed -9 while the pod ran and the pod was removed while it was down.

What the guest has (IRQs and their names, which accept a write, cpuidle, cpufreq) is written to
``quiet.txt`` in the results, with the seconds each pod's CPU took to be quiet after its start
returned: a figure, measured and printed, never judged (the wait is the hang guard only).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_lab import quiet_host
from cpuset_lab.quiet_host import IRQ, Snapshot
from tests.vm import quiet
from tests.vm.quiet_pods import PATIENCE, Record, note, quiet_pod
from tests.vm.runtime import Guest, Pods, wait_until


@pytest.fixture
def facts() -> tuple[Snapshot, list[Path]]:
    """The guest's quiet-CPU files before the test, and the IRQs that accept a write."""
    if not quiet.writable():
        pytest.fail("the guest's /proc/irq is not writable", pytrace=False)
    return quiet.guest_facts()






def put_back(guest: Guest, saved: Snapshot) -> None:
    wait_until(lambda: not quiet_host.differences(saved),
               lambda: f"the guest's files put back: {quiet_host.differences(saved)}\n"
                       f"{guest.plugin.tail()}", PATIENCE)


def test_a_quiet_pods_cpu_loses_interrupts_and_idle_states_and_gets_them_back(
        guest: Guest, pods: Pods, facts: tuple[Snapshot, list[Path]],
        record_testsuite_property: Record) -> None:
    saved, irqs = facts
    note(quiet.describe(saved, irqs))
    managed = quiet.managed(saved, irqs)
    names = quiet.irq_names()
    assert any("nvme" in names.get(n, "") for n in managed), (  # the shape has NVMe queues
        f"no NVMe queue vector refused a write: {quiet.describe(saved, irqs)}")
    assert any("nvme" in names.get(quiet.number(p), "") for p in irqs)  # admin vectors do not
    with quiet_pod(guest, pods, irqs, record_testsuite_property, "alone") as (_, cpu):
        others = [p for c in range(8) if c != cpu for p in quiet.deep_idle_states(c)]
        assert all(p.read_text().strip() == saved[p] for p in others)  # its CPU's alone
        # Only IRQs allowed on its CPU are tried: the refusals of those are named.
        refused = [n for n in managed
                   if cpu in CPUSet.parse(saved[IRQ / str(n) / "smp_affinity_list"])]
        log = guest.plugin.log.read_text(errors="replace")
        named = [n for n in refused if f"IRQ {n}: the kernel keeps its affinity" in log]
        note(f"IRQs refusing a write that may go to CPU {cpu}, named in the plugin's log: "
             f"{named} of {refused}: " + "; ".join(f"{n} {names.get(n, '?')}" for n in refused)
             + "\n" + "\n".join(line for line in log.splitlines()
                                 if "dpdk/app" in line and "best effort" in line))
        assert named == refused, log[-3000:]
        if not quiet.deep_idle_states(cpu):  # no cpuidle (TCG): best effort, saying why
            assert f"no cpuidle states for CPU(s) {cpu}" in log, log[-3000:]
    pods.remove_all()
    put_back(guest, saved)


def test_a_plugin_killed_while_a_pod_is_quiet_puts_back_at_its_next_start(
        guest: Guest, pods: Pods, facts: tuple[Snapshot, list[Path]],
        record_testsuite_property: Record) -> None:
    saved, irqs = facts
    try:
        with quiet_pod(guest, pods, irqs, record_testsuite_property, "before_kill") as (pod, _):
            guest.plugin.kill()
            guest.cri.stop_pod(pod)  # the pod goes while nobody is there to put anything back
            guest.cri.remove_pod(pod)
            pods.pods.remove(pod)
        assert quiet_host.differences(saved)
        started = time.monotonic()
        guest.plugin.start()
        guest.plugin.wait_synchronized(PATIENCE)
        put_back(guest, saved)
        note(f"put back {time.monotonic() - started:.1f} s (guest monotonic) after the "
             f"restart of a plugin killed -9 while its pod was quiet")
    finally:
        if not guest.plugin.running():
            guest.plugin.start()
            guest.plugin.wait_synchronized(PATIENCE)
