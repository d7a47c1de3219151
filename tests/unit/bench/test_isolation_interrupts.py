"""The isolation bench's interrupt counts from /proc/interrupts: devices' lines only."""

from __future__ import annotations

import pytest
from isolation_bench.interrupts import device_interrupts, taken

SAMPLE = """\
           CPU0       CPU1
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 36:          0      27267 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 39:       1326          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
  2:          0
NMI:          0          0   Non-maskable interrupts
LOC:       9366      11443   Local timer interrupts
ERR:          0
"""


def test_numbered_lines_are_summed_per_cpu_and_named_ones_left_out() -> None:
    assert device_interrupts(SAMPLE) == {0: 1327, 1: 27267}


def test_a_header_without_cpus_is_refused() -> None:
    with pytest.raises(ValueError, match="names no CPU"):
        device_interrupts("")
    with pytest.raises(ValueError, match="names no CPU"):
        device_interrupts("nothing here\n 24: 1 0\n")


def test_interrupts_taken_by_some_cpus_between_two_readings() -> None:
    before, after = {0: 10, 1: 20}, {0: 15, 1: 120, 2: 7}
    assert taken(before, after, [1]) == 100
    assert taken(before, after, [0, 1]) == 105
    assert taken(before, after, [2]) == 7  # a CPU absent before counts from none
