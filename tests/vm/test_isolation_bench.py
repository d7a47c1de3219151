"""The isolation bench (``bench/isolation.py``, issue 43) inside the ``isolation-bench`` shape's
guest: the default shape's machine (8 vCPUs on 2 NUMA nodes, an NVMe controller on each) with
its own containerd and plugins, nothing else running. The disk writer writes to an ext4 made on
node 0's NVMe disk, so its interrupts are the NVMe controller's, as on a node.

The bench prints a table and asserts nothing; this test keeps its output
(``isolation.txt`` in the results) and fails only when the bench could not run (it exited
non-zero). Its size: ``NRI_CPUSET_VM_BENCH_ARGS`` (default :data:`ARGS`).

Under QEMU's software emulation the figures are the emulator's as much as the plugin's: the
guest's 8 vCPUs are threads sharing this machine's 2 CPUs, there are no idle states, and the
guest's timers wake at the host's pace (docs/performance.md says what it can and cannot show).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.vm.conftest import ShapeFacts
from tests.vm.devices import nvme_disk
from tests.vm.runtime import RESULTS, SCALE, WORK

REPO = Path(__file__).resolve().parents[2]
ARGS = "--quick --periods 10000"
"""10 000 periods (the issue's least), a 0.3 s job, 2 spinning neighbours and the disk writer,
one round: each case's containers take minutes to start under emulation, the probe seconds."""


def test_the_isolation_bench_runs_in_the_guest(shape: ShapeFacts) -> None:
    work = WORK / "bench"  # a tmpfs: unix sockets cannot live on the 9p root
    (work / "io").mkdir(parents=True, exist_ok=True)
    disk, address = nvme_disk(shape, 0)
    subprocess.run(["mkfs.ext4", "-q", "-F", disk], check=True)
    subprocess.run(["mount", disk, str(work / "io")], check=True)
    args = shlex.split(os.environ.get("NRI_CPUSET_VM_BENCH_ARGS", ARGS))
    command = [sys.executable, str(REPO / "bench" / "isolation.py"), *args,
               "--workdir", str(work), "--time-scale", f"{max(1.0, SCALE):g}"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    report = RESULTS / "isolation.txt"
    began = time.monotonic()
    # Written as it runs (the results directory is the host's): a long run can be followed.
    with report.open("w") as out:
        out.write(f"$ {shlex.join(command[1:])}\n(guest: {os.cpu_count()} vCPUs, disk "
                  f"writer on {disk} of {address})\n")
        out.flush()
        try:
            done = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  check=False, timeout=7200)
        finally:
            subprocess.run(["umount", str(work / "io")], check=False)
        out.write(f"({time.monotonic() - began:.0f} s in the guest)\n")
    print(report.read_text())
    assert done.returncode == 0, f"the bench exited {done.returncode}: see {report}"
