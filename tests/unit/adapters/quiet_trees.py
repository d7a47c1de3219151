"""Quiet CPUs' fake /proc and /sys trees and ledger entries, for the quiet applier's tests."""

from __future__ import annotations

import errno
from pathlib import Path

from cpuset_adapters.quiet.host import QuietHost
from cpuset_core.cpuset import CPUSet
from cpuset_core.ledger import Entry
from cpuset_core.model import Kind
from cpuset_core.quiet_request import Quiet

ONLINE = CPUSet.range(0, 3)


MANAGED = "26"
"""The IRQ whose affinity refuses a write with EIO, as a kernel-managed vector does."""


class FakeHost(QuietHost):
    """The real host's code on a tree, with one kernel-managed IRQ."""

    def write(self, path: str, text: str) -> None:
        if Path(path).parent.name == MANAGED and path.endswith("smp_affinity_list"):
            raise OSError(errno.EIO, "Input/output error")
        super().write(path, text)


def node(tree: Path, *, cpufreq: bool = True, pm_qos: bool = True,
         admin: bool | None = None) -> FakeHost:
    """4 CPUs; IRQs 24 (0-3), 25 (2), 26 (0-3, managed); each CPU with POLL (0 µs), C1 (2 µs),
    C6 (100 µs), a PM QoS resume latency without constraint (``0``); a cpufreq governor
    ``schedutil`` of three. ``admin``: whether the host's code may disable idle states
    (``None``: as this process may)."""
    irq = tree / "proc/irq"
    for number, affinity in (("24", "0-3"), ("25", "2"), (MANAGED, "0-3")):
        (irq / number).mkdir(parents=True)
        (irq / number / "smp_affinity_list").write_text(affinity + "\n")
    (irq / "default_smp_affinity").write_text("f\n")
    for cpu in ONLINE:
        base = tree / f"sys/devices/system/cpu/cpu{cpu}"
        for index, latency in enumerate((0, 2, 100)):
            state = base / f"cpuidle/state{index}"
            state.mkdir(parents=True)
            (state / "latency").write_text(f"{latency}\n")
            (state / "disable").write_text("0\n")
        if pm_qos:
            (base / "power").mkdir()
            (base / "power/pm_qos_resume_latency_us").write_text("0\n")
        if cpufreq:
            (base / "cpufreq").mkdir()
            (base / "cpufreq/scaling_governor").write_text("schedutil\n")
            (base / "cpufreq/scaling_available_governors").write_text(
                "performance powersave schedutil\n")
    return FakeHost(tree / "proc", tree / "sys", admin=admin)


def holding(cid: str, cpus: str, quiet: Quiet | None) -> Entry:
    return Entry(container_id=cid, subject=f"ns/{cid}/main", sandbox_id=f"sb-{cid}",
                 kind=Kind.INTEGER, cpus=CPUSet.parse(cpus), request=1, quiet=quiet)


def text(tree: Path, name: str) -> str:
    return (tree / name).read_text().strip()
