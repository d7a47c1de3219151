"""The host's files quiet CPUs change, for the lab's users that make the plugin change them for
real (e2e tests, the soak, the isolation bench): a snapshot, a put-back, and one lock.

``/proc/irq`` and cpuidle are the machine's, not a lab's: two labs quieting CPUs at once (two
test runs, a soak beside a test) would each journal the other's writes as "originals" and put
them back for good. Whoever changes them holds :func:`held` for as long as its plugin may.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

IRQ = Path("/proc/irq")
CPU = Path("/sys/devices/system/cpu")
LOCK = Path("/run/nri-cpuset-lab/quiet-host.lock")

Snapshot = dict[Path, str]
"""Each file quiet CPUs may change, with its value."""


@contextmanager
def held(lock: Path = LOCK) -> Iterator[None]:
    """The host's quiet-CPU files to the holder alone; waits for another holder to let go."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing lets go of the lock


def writable(irq: Path = IRQ) -> bool:
    """Whether interrupts can be moved here at all (root, a writable ``/proc``)."""
    return os.access(irq / "default_smp_affinity", os.W_OK)


def snapshot(irq: Path = IRQ, cpu: Path = CPU) -> Snapshot:
    """Every file quiet CPUs may change, with its value now."""
    files = [*irq.glob("*/smp_affinity_list"), irq / "default_smp_affinity",
             *cpu.glob("cpu[0-9]*/cpuidle/state[0-9]*/disable"),
             *cpu.glob("cpu[0-9]*/power/pm_qos_resume_latency_us"),
             *cpu.glob("cpu[0-9]*/cpufreq/scaling_governor")]
    return {path: path.read_text().strip() for path in sorted(files) if path.exists()}


def _write(path: Path, value: str) -> None:
    # Truncation is a no-op on procfs and sysfs; on a fake tree a shorter value ("0" over
    # "n/a") would otherwise keep the old one's tail.
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def put_back(saved: Snapshot) -> list[str]:
    """Write back what differs from ``saved``; return what could not be (an IRQ gone since is
    not a failure, nor a kernel-managed one, which refuses every write and so never changed)."""
    failed = []
    for path, value in saved.items():
        try:
            if path.exists() and path.read_text().strip() != value:
                _write(path, value)
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.ENOENT):
                failed.append(f"{path}: {exc}")
    return failed


def differences(saved: Snapshot, now: Snapshot | None = None) -> dict[Path, tuple[str, str]]:
    """Files whose value is not the one saved (before, now); files that came or went since
    (an IRQ freed or requested meanwhile) are nobody's change."""
    now = snapshot() if now is None else now
    return {path: (value, now[path]) for path, value in saved.items()
            if path in now and now[path] != value}


def accepting(saved: Snapshot) -> list[Path]:
    """The IRQ affinity files that accept a write (each rewritten with its own value), as the
    plugin finds them: kernel-managed vectors refuse."""
    irqs = []
    for path, value in saved.items():
        if path.name != "smp_affinity_list":
            continue
        try:
            _write(path, value)
        except OSError:
            continue
        irqs.append(path)
    return irqs
