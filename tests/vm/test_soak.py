"""The chaos soak (``python -m cpuset_soak``, docs/performance.md) inside the guest, with CPUs
taken offline and back (``--hotplug``) on a machine with two NUMA nodes and cgroup v2: what
this host's soak cannot reach (a pin's memory nodes, hotplug).

The soak runs its own containerd and plugin (it restarts and kills them), beside the session's
(``guest``), which it does not touch. Its history, output and the plugin's and containerd's
logs are kept with the results (``soak/``). ``NRI_CPUSET_VM_SOAK_MINUTES`` and ``..._SEED``
change the walk."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.vm.conftest import ShapeFacts
from tests.vm.runtime import RESULTS, SCALE, WORK

REPO = Path(__file__).resolve().parents[2]
MINUTES = float(os.environ.get("NRI_CPUSET_VM_SOAK_MINUTES", "1.5"))
SLOW = "containerd-restart,plugin-sigstop,plugin-kill-mid-burst"
"""Faults a guest cannot afford many of in two minutes (each is tens of emulated seconds);
the plugin killed -9 stays."""
SEED = int(os.environ.get("NRI_CPUSET_VM_SOAK_SEED", "4"))


def test_a_short_soak_taking_cpus_offline_and_back_finds_no_violation(
        shape: ShapeFacts) -> None:
    assert shape["cgroup"] == 2, "the soak's hotplug needs cgroup v2"
    out = RESULTS / "soak"
    out.mkdir(exist_ok=True)
    work = WORK / "soak"  # on the guest's tmpfs, short: unix socket paths are limited
    work.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TMPDIR": str(work)}
    command = [sys.executable, "-m", "cpuset_soak", "--minutes", str(MINUTES),
               "--seed", str(SEED), "--runtime", "1.7", "--hotplug",
               "--time-scale", f"{max(1.0, SCALE):g}", "--without", SLOW, "--keep"]
    began = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=(MINUTES * 60 + 600) * max(1.0, SCALE / 2), check=False)
    took = time.monotonic() - began
    (out / "soak.log").write_text(done.stdout + done.stderr)
    kept = re.search(r"run directory kept: (\S+) ", done.stdout)
    if kept:
        for name in ("history.jsonl", "plugin.log", "lab/containerd.log"):
            if (Path(kept.group(1)) / name).exists():
                shutil.copy(Path(kept.group(1)) / name, out / Path(name).name)
    closing = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
    print(f"\nsoak ({' '.join(command[3:])}): {took:.0f} s in the guest\n{closing}")
    assert done.returncode == 0, f"the soak exited {done.returncode}:\n{done.stdout[-6000:]}" \
                                 f"\n{done.stderr[-3000:]}"
    assert re.search(r"cpu-offline [1-9]", closing), f"no CPU went offline in this walk: {closing}"
