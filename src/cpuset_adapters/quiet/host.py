"""Where the node keeps what quiet CPUs change, under a root each (``/proc``, ``/sys``) so that
tests run on fake trees: interrupt affinities, idle states (and each CPU's PM QoS resume
latency), frequency governors; and whether a request can be met at all here."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cpuset_adapters.quiet import idle
from cpuset_core.cpuset import CPUSet
from cpuset_core.quiet_request import Quiet


@dataclass(frozen=True, slots=True)
class IdleState:
    """One idle state of one CPU: its ``disable`` file and its exit latency (µs)."""

    disable: str
    latency: int


def parse_mask(text: str) -> CPUSet:
    """A kernel CPU mask (``ff,ffffffff``: hex words, most significant first) as a set."""
    return CPUSet.from_mask(int(text.strip().replace(",", "") or "0", 16))


def format_mask(cpus: CPUSet) -> str:
    """``cpus`` as a kernel CPU mask, in comma-separated 32-bit words."""
    digits = f"{cpus.mask:x}"
    digits = digits.zfill(-(-len(digits) // 8) * 8)
    return ",".join(digits[i:i + 8] for i in range(0, len(digits), 8)).lstrip("0") or "0"


class QuietHost:
    """The node's files under ``proc_root`` and ``sys_root``; ``admin``: whether this process
    may disable idle states (``None``: its CAP_SYS_ADMIN, read when asked)."""

    def __init__(self, proc_root: str | Path = "/proc", sys_root: str | Path = "/sys", *,
                 admin: bool | None = None) -> None:
        self.irq_root = Path(proc_root) / "irq"
        self.cpu_root = Path(sys_root) / "devices/system/cpu"
        self._admin = admin

    def admin(self) -> bool:
        """Whether the kernel's cpuidle store lets this process disable a state (read once:
        a process's capabilities do not grow)."""
        if self._admin is None:
            self._admin = capable(CAP_SYS_ADMIN)
        return self._admin

    @property
    def default_affinity(self) -> str:
        return str(self.irq_root / "default_smp_affinity")

    def irqs(self) -> list[str]:
        """Every IRQ's ``smp_affinity_list``, in IRQ order (none without ``/proc/irq``)."""
        if not self.irq_root.is_dir():
            return []
        numbers = sorted(int(p.name) for p in self.irq_root.iterdir() if p.name.isdigit())
        return [str(self.irq_root / str(n) / "smp_affinity_list") for n in numbers
                if (self.irq_root / str(n) / "smp_affinity_list").exists()]

    def idle_states(self, cpu: int) -> list[IdleState]:
        """``cpu``'s idle states with their exit latency (none without cpuidle)."""
        where = self.cpu_root / f"cpu{cpu}" / "cpuidle"
        states = sorted((p for p in where.glob("state*") if p.name[5:].isdigit()),
                        key=lambda p: int(p.name[5:])) if where.is_dir() else []
        return [IdleState(str(p / "disable"), int((p / "latency").read_text()))
                for p in states]

    def resume_latency(self, cpu: int) -> str:
        """``cpu``'s PM QoS resume-latency file (its CPU device's, in µs)."""
        return str(self.cpu_root / f"cpu{cpu}" / idle.PM_QOS_FILE)

    def governor(self, cpu: int) -> str:
        return str(self.cpu_root / f"cpu{cpu}" / "cpufreq" / "scaling_governor")

    def governors_available(self, cpu: int) -> list[str]:
        path = self.cpu_root / f"cpu{cpu}" / "cpufreq" / "scaling_available_governors"
        return path.read_text().split() if path.exists() else []

    def why_not(self, quiet: Quiet, cpus: CPUSet) -> list[str]:
        """Why ``quiet`` cannot be met on ``cpus`` here (nothing: it can)."""
        why = []
        if quiet.irqs:
            if not Path(self.default_affinity).exists():
                why.append(f"interrupts: no {self.default_affinity}")
            elif not os.access(self.default_affinity, os.W_OK):
                why.append(f"interrupts: {self.irq_root} is read-only here")
        if quiet.idle_limit is not None:
            why += idle.why_not(self, cpus, self.admin())
        if quiet.governor is not None:
            for cpu in cpus:
                available = self.governors_available(cpu)
                if quiet.governor not in available:
                    why.append(f"governor: CPU {cpu} has " + (
                        f"no governor {quiet.governor!r} (available: {' '.join(available)})"
                        if available else "no cpufreq"))
                    break
                if not os.access(self.governor(cpu), os.W_OK):
                    why.append(f"governor: cpufreq of CPU {cpu} is read-only here")
                    break
        return why

    def read(self, path: str) -> str:
        return Path(path).read_text().strip()

    def write(self, path: str, text: str) -> None:
        """Write ``text`` in one write(2), as sysfs and procfs want it. Raises OSError."""
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # truncation: a no-op on sysfs, procfs
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def kernel_managed(exc: OSError, path: str = "") -> bool:
    """Whether a refused affinity write is the kernel's own. Managed vectors answer EIO on some
    kernels; on others (6.x: ``irq_can_set_affinity_usr``) their files are mode 0444 and root's
    write gets EPERM, while a process without CAP_DAC_OVERRIDE (the DaemonSet's) is refused
    with EACCES before the kernel is asked."""
    if exc.errno in (errno.EIO, errno.EPERM):
        return True
    try:
        return exc.errno == errno.EACCES and not os.stat(path).st_mode & 0o222
    except OSError:
        return False


CAP_SYS_ADMIN: Final = 21


def capable(bit: int, status: str | Path = "/proc/self/status") -> bool:
    """Whether this process has capability ``bit`` in its effective set (``CapEff``)."""
    for line in Path(status).read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return False
