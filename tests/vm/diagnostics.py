"""What the guest looks like when a VM test fails, kept with the results before anything is
torn down: the runtime may be wedged for good (2026-11-29, twice: containerd 1.7 stopped
answering every RegisterPlugin after a test of ``test_devices.py`` failed), and a guest that
runs into the lab's time limit is killed with everything on its tmpfs.

Each failure appends to ``failure-diagnostics.txt``: every process with its state and wait
channel, the kernel stacks of the blocked ones and of the runtime's processes, the kernel's
list of blocked tasks (sysrq ``w``), and containerd's and its shims' goroutines (SIGUSR1 makes
them log their stacks; containerd's log is copied once they have).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.vm.runtime import RESULTS, Guest

REPORT = "failure-diagnostics.txt"
RUNTIME_PROCESSES = ("containerd", "containerd-shim-runc-v2", "runc")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError as error:
        return f"({error.strerror})"


def _processes() -> list[tuple[int, str, str]]:
    """(pid, state, command name) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _read(entry / "stat")
        # The name is in parentheses and may hold spaces: the state follows the last ')'.
        name = stat[stat.find("(") + 1:stat.rfind(")")]
        state = stat[stat.rfind(")") + 2:stat.rfind(")") + 3]
        found.append((int(entry.name), state, name))
    return sorted(found)


def _ps() -> str:
    result = subprocess.run(["ps", "-eo", "pid,ppid,stat,etimes,wchan:32,args"],
                            capture_output=True, text=True, check=False, timeout=30)
    return result.stdout + result.stderr


def _kernel_stacks(processes: list[tuple[int, str, str]]) -> list[str]:
    lines = []
    for pid, state, name in processes:
        if state == "D" or name in RUNTIME_PROCESSES:
            lines.append(f"-- {pid} {name} state {state}")
            for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
                stack = _read(task / "stack")
                if stack:
                    lines.append(f"   task {task.name}:\n" + stack)
    return lines


def _blocked_tasks() -> str:
    """The kernel's list of tasks in uninterruptible sleep, from its log."""
    try:
        Path("/proc/sysrq-trigger").write_text("w")
    except OSError as error:
        return f"(sysrq: {error.strerror})"
    time.sleep(0.5)
    result = subprocess.run(["dmesg"], capture_output=True, text=True, check=False, timeout=30)
    return "\n".join(result.stdout.splitlines()[-300:])


def _dump_goroutines(processes: list[tuple[int, str, str]]) -> str:
    signalled = []
    for pid, _state, name in processes:
        if name in RUNTIME_PROCESSES[:2]:
            try:
                os.kill(pid, signal.SIGUSR1)
                signalled.append(f"{name} {pid}")
            except OSError as error:
                signalled.append(f"{name} {pid}: {error.strerror}")
    return ", ".join(signalled) or "(no containerd or shim running)"


def collect(guest: Guest, test: str) -> None:
    """Append the guest's state at ``test``'s failure to the report; copy containerd's log."""
    processes = _processes()
    sections = [f"==== {test} failed at uptime {_read(Path('/proc/uptime')).split()[0]} s",
                "--- processes", _ps(),
                "--- kernel stacks of blocked tasks and the runtime's processes",
                *_kernel_stacks(processes),
                "--- blocked tasks (sysrq w) and the kernel's log", _blocked_tasks(),
                "--- goroutine stacks requested (SIGUSR1) from: " + _dump_goroutines(processes),
                "", ""]
    with (RESULTS / REPORT).open("a") as out:
        out.write("\n".join(sections))
    time.sleep(2)  # containerd writes its dump to its log
    log = guest.lab.config.log_path
    if log.exists():
        shutil.copy(log, RESULTS / "containerd.log")
