"""The lab's snapshot of the host's quiet-CPU files (``cpuset_lab.quiet_host``) on a fake tree:
every file quiet CPUs may change, each CPU's PM QoS resume latency among them, and the put-back
of whatever differs."""

from __future__ import annotations

from pathlib import Path

from cpuset_lab import quiet_host


def tree(root: Path) -> tuple[Path, Path]:
    irq, cpu = root / "proc/irq", root / "sys/devices/system/cpu"
    (irq / "24").mkdir(parents=True)
    (irq / "24/smp_affinity_list").write_text("0-1\n")
    (irq / "default_smp_affinity").write_text("3\n")
    for n in (0, 1):
        (cpu / f"cpu{n}/cpuidle/state1").mkdir(parents=True)
        (cpu / f"cpu{n}/cpuidle/state1/disable").write_text("0\n")
        (cpu / f"cpu{n}/power").mkdir()
        (cpu / f"cpu{n}/power/pm_qos_resume_latency_us").write_text("0\n")
    return irq, cpu


def test_the_snapshot_holds_each_cpus_resume_latency(tmp_path: Path) -> None:
    irq, cpu = tree(tmp_path)
    saved = quiet_host.snapshot(irq, cpu)
    assert saved[cpu / "cpu1/power/pm_qos_resume_latency_us"] == "0"
    assert len(saved) == 2 + 2 + 2  # an IRQ and the default, two states, two latencies


def test_a_resume_latency_left_changed_is_a_difference_and_put_back(tmp_path: Path) -> None:
    irq, cpu = tree(tmp_path)
    saved = quiet_host.snapshot(irq, cpu)
    qos = cpu / "cpu0/power/pm_qos_resume_latency_us"
    qos.write_text("n/a\n")
    assert quiet_host.differences(saved, quiet_host.snapshot(irq, cpu)) == {qos: ("0", "n/a")}
    assert quiet_host.put_back(saved) == []
    assert qos.read_text().strip() == "0"
