"""The VM lab's watch over a guest without a VM: the heartbeat the host reads (a guest that
stops beating is stalled), the kernel's warnings a timed-out shape prints, and the guest's
per-test hang guard (a phase past its limit fails with every thread's stack)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from cpuset_lab.vm_heartbeat import Heartbeat, stuck_in_kernel
from cpuset_lab.vm_output import explain, kernel_warnings
from cpuset_lab.vm_results import Outcome, ShapeResult, judge
from tests.vm.hang_guard import REPORT, TestHung, guarded


def test_a_guest_counts_as_stalled_only_after_its_beats_stop_for_the_limit(
        tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    watch = Heartbeat(beat, limit=300)
    watch.look(0)
    assert watch.silence(10_000) == ""  # no beat yet: the boot limit's business
    beat.write_text("12.40\n")
    watch.look(100)
    watch.look(390)  # the same beat again is no new beat
    assert watch.silence(399) == ""
    why = watch.silence(400)
    assert "heartbeat stopped" in why
    assert "guest uptime 12.40 s" in why
    assert "300 s ago" in why
    beat.write_text("")  # caught between the guest's truncate and its write: not a beat
    watch.look(401)
    assert watch.silence(401) == why.replace("300 s ago", "301 s ago")
    beat.write_text("17.41\n")
    watch.look(402)
    assert watch.silence(701) == ""


def test_a_guest_stopped_for_a_silent_heartbeat_is_stalled_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "timings").write_text("booted 20.5\n")
    result = judge("default", tmp_path, wall_s=900, timed_out=False,
                   stalled="the guest's heartbeat stopped: ...")
    assert result.outcome is Outcome.STALLED
    assert result.detail == "the guest's heartbeat stopped: ..."
    assert result.boot_s == 20.5


def test_a_timed_out_shape_prints_the_kernels_warnings_beside_the_end_of_its_log(
        tmp_path: Path) -> None:
    console = ["[   1.0] Linux version 6.1.0",
               "[ 400.2] INFO: task containerd:812 blocked for more than 120 seconds.",
               "[ 400.3] noise",
               "[ 520.9] rcu: INFO: rcu_preempt self-detected stall on CPU"]
    (tmp_path / "console.log").write_text("\n".join(console) + "\n")
    (tmp_path / "guest.log").write_text("tests/vm/test_numa_mems.py::test_x \n")
    (tmp_path / "vng.rc").write_text("-15\n")
    text = explain(ShapeResult("default", Outcome.TIMED_OUT, detail="no readable junit.xml"),
                   tmp_path)
    assert "test_numa_mems.py::test_x" in text
    assert "the guest kernel's last 2 warnings" in text
    assert console[1] in text
    assert console[3] in text
    assert "noise" not in text
    assert "hang guard's report" not in text  # none written
    (tmp_path / REPORT).write_text("== tests/vm/test_numa_mems.py::test_x (call): still "
                                   "running after 900 s\n")
    assert "still running after 900 s" in explain(
        ShapeResult("default", Outcome.FAILED, detail="1 failed"), tmp_path)
    assert kernel_warnings("\n".join(console), keep=1) == [console[3]]


def test_a_phase_past_its_limit_fails_with_every_threads_stack(tmp_path: Path) -> None:
    with pytest.raises(TestHung, match="still running after 0 s"), \
            guarded("tests/vm/test_x.py::test_y (call)", tmp_path, limit=0.2):
        time.sleep(30)  # interrupted by the guard; without it, the test fails after 30 s
    report = (tmp_path / REPORT).read_text()
    assert "== tests/vm/test_x.py::test_y (call): still running after 0 s" in report
    assert "test_a_phase_past_its_limit_fails_with_every_threads_stack" in report
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_phase_within_its_limit_leaves_no_report_and_no_timer(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGALRM)
    with guarded("tests/vm/test_x.py::test_y (setup)", tmp_path, limit=30):
        pass
    assert (tmp_path / REPORT).read_text() == ""
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before


def test_a_test_stuck_in_the_guest_kernel_past_its_guard_makes_the_guest_stalled(
        tmp_path: Path) -> None:
    assert stuck_in_kernel(tmp_path) == ""  # no report yet
    report = tmp_path / REPORT
    report.write_text("== tests/vm/test_a.py::test_b (call): still running after 900 s\n"
                      "Thread 0x7f (most recent call first):\n  File \"x.py\", line 1\n")
    assert stuck_in_kernel(tmp_path) == ""  # the guard's signal was taken: a failed test
    with report.open("a") as more:
        more.write("Timeout (0:16:00)!\nThread 0x7f (most recent call first):\n")
    why = stuck_in_kernel(tmp_path)
    assert why.startswith("tests/vm/test_a.py::test_b (call): still running after 900 s, "
                          "and its process did not take the hang guard's signal")
    assert str(report) in why
    report.write_text("Timeout (0:16:00)!\n")
    assert stuck_in_kernel(tmp_path).startswith("a test (the last one guest.log names) hung")
