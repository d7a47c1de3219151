"""A quiet pod started in the guest and what it measured, for the VM lab's quiet-CPU tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import guaranteed
from tests.vm import quiet
from tests.vm.runtime import RESULTS, SCALE, Guest, Pods

Record = Callable[[str, object], None]
"""pytest's ``record_testsuite_property``."""

PATIENCE = 60.0
"""Host seconds (scaled) any one wait here may take before the test counts as hung."""


def note(text: str) -> None:
    print(text)
    with (RESULTS / "quiet.txt").open("a") as out:
        out.write(text + "\n")


@contextmanager
def quiet_pod(guest: Guest, pods: Pods, irqs: list[Path], record: Record,
              label: str) -> Iterator[tuple[str, int]]:
    """A Guaranteed pod in CRI-O's words with a 1-CPU container: (its pod, its CPU) once
    quiet, the seconds that took after its start returned measured and kept (the JUnit
    report's suite property ``quiet_after_start_s.<label>``: xunit2 has no test properties)."""
    pod = pods.pod("dpdk", QosClass.GUARANTEED, annotations=quiet.CRIO_QUIET)
    cid = pods.container(pod, "app", guaranteed(1, "64Mi"))
    started = time.monotonic()
    [entry] = [c for c in guest.state()["containers"] if c["id"] == cid]
    cpu = int(entry["cpus"])
    seconds = quiet.first_quiet(cpu, irqs, started, PATIENCE * SCALE)
    record(f"quiet_after_start_s.{label}", f"{seconds:.2f}")
    note(f"CPU {cpu} quiet {seconds:.2f} s (guest monotonic) after the start returned; "
         f"reason: {entry.get('reason', '')}")
    yield pod, cpu
