"""What the isolation bench says a case did to the host's quiet-CPU files
(``isolation_bench/host.py``'s ``changes``), on fake snapshots."""

from __future__ import annotations

from pathlib import Path

from isolation_bench.host import changes

IRQ = Path("/proc/irq")
IDLE = Path("/sys/devices/system/cpu/cpu0/cpuidle/state1/disable")
BEFORE = {IRQ / "24/smp_affinity_list": "0-1", IRQ / "36/smp_affinity_list": "0",
          IRQ / "default_smp_affinity": "3", IDLE: "0"}


def test_nothing_changed_says_nothing() -> None:
    assert changes(BEFORE, dict(BEFORE)) == "nothing"


def test_changes_are_counted_by_kind() -> None:
    now = {**BEFORE, IRQ / "24/smp_affinity_list": "1", IRQ / "36/smp_affinity_list": "1",
           IRQ / "default_smp_affinity": "2", IDLE: "1"}
    assert changes(BEFORE, now) == "2 IRQ affinities, 1 default affinity, 1 idle states"


def test_an_irq_gone_meanwhile_is_no_change() -> None:
    now = dict(BEFORE)
    del now[IRQ / "24/smp_affinity_list"]
    assert changes(BEFORE, {**now, IDLE: "1"}) == "1 idle states"


def test_a_resume_latency_changed_is_counted_as_such() -> None:
    qos = Path("/sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us")
    before = {**BEFORE, qos: "0"}
    assert changes(before, {**before, qos: "n/a"}) == "1 resume latencies"
