"""The creation bench's CPU accounting (``bench/cpu_account.py``): on this host's own cgroup v1
``cpuacct`` when it has one (root), a process moved into a group is counted there with its
children and handed back when the group goes."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from cpu_account import CpuAccount, available, machine_ns

SPIN = "import time\nend = time.process_time() + 0.2\nwhile time.process_time() < end: pass\n"
PARENT = (
    "import subprocess, sys\n"
    "sys.stdin.readline()\n"
    f"subprocess.run([sys.executable, '-c', {SPIN!r}], check=True)\n"
    "print('spun', flush=True)\n"
    "sys.stdin.readline()\n"
)


def test_a_cgroup_v2_host_has_no_cpuacct_to_count_on(tmp_path: Path) -> None:
    assert not available(tmp_path)


def test_the_machine_is_read_from_the_roots_usage(tmp_path: Path) -> None:
    (tmp_path / "cpuacct.usage").write_text("1234567\n")
    assert available(tmp_path)
    assert machine_ns(tmp_path) == 1234567


def cpuacct_of(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return path
    raise AssertionError(f"pid {pid} has no cpuacct line")


@pytest.mark.skipif(os.geteuid() != 0 or not available(), reason="needs root and cpuacct (v1)")
def test_a_process_and_the_children_it_starts_are_counted_then_handed_back() -> None:
    account = CpuAccount(f"nri-bench-test-{uuid.uuid4().hex[:8]}")
    account.open()
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert parent.stdin is not None
    assert parent.stdout is not None
    try:
        account.adopt(parent.pid)
        assert cpuacct_of(parent.pid) == f"/{account.path.name}"
        counted = account.used_ns()
        machine = machine_ns()
        parent.stdin.write("go\n")
        parent.stdin.flush()
        assert parent.stdout.readline() == "spun\n"
        # The child spun 0.2 s of CPU after the move: counted here, and in the machine's.
        assert account.used_ns() - counted >= 150_000_000
        assert machine_ns() - machine >= 150_000_000
        account.close()
        assert cpuacct_of(parent.pid) == "/"
        assert not account.path.exists()
    finally:
        account.close()
        parent.communicate("\n")
