"""What one guest of the VM lab left in its results directory, judged.

The guest script (``scripts/vm-guest``) writes, on the shared (``--rwdir``) results directory:
``booted`` (the guest's uptime when the script started), ``pytest.rc`` (pytest's exit code),
``timings`` (``name seconds`` lines, guest uptimes) and ``junit.xml``. A shape passes only when
the guest booted, pytest exited 0, and the JUnit report counts at least one test and no
failure, error or skip (a skip in the lab means a test did not check what it is there for).
"""

from __future__ import annotations

import enum
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final


class Outcome(enum.Enum):
    PASSED = "passed"
    NOT_BOOTED = "guest did not boot"
    STALLED = "guest kernel stalled"
    TIMED_OUT = "timed out"
    NO_RESULTS = "no test results"
    FAILED = "tests failed"


@dataclass(frozen=True, slots=True)
class Counts:
    """A JUnit report's totals."""

    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0

    @property
    def passed(self) -> int:
        return self.tests - self.failures - self.errors - self.skipped

    def __str__(self) -> str:
        return (f"{self.passed} passed, {self.failures} failed, {self.errors} errors, "
                f"{self.skipped} skipped")


@dataclass(frozen=True, slots=True)
class ShapeResult:
    """One shape's run: its outcome, the figures, and why it failed (empty when it passed)."""

    shape: str
    outcome: Outcome
    counts: Counts = Counts()
    boot_s: float | None = None
    """Guest uptime when the guest script started (kernel boot and virtme-ng's init)."""
    tests_s: float | None = None
    """The guest's pytest session (containerd and the plugin start inside it)."""
    wall_s: float = 0.0
    """Host wall clock from launching QEMU to its exit."""
    failed_tests: list[str] = field(default_factory=list)
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.PASSED


def read_counts(junit: Path) -> tuple[Counts, list[str]]:
    """The totals of a pytest JUnit report and the ids of the tests that did not pass.
    Raises ``OSError`` or ``ET.ParseError`` when the report is missing or unreadable."""
    root = ET.parse(junit).getroot()  # noqa: S314 - our own guest's report
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    totals = [0, 0, 0, 0]
    bad: list[str] = []
    for suite in suites:
        for i, key in enumerate(("tests", "failures", "errors", "skipped")):
            totals[i] += int(suite.get(key, "0"))
        for case in suite.iter("testcase"):
            for child in case:
                if child.tag in ("failure", "error", "skipped"):
                    bad.append(f"{case.get('classname', '')}::{case.get('name', '')} "
                               f"({child.tag})")
                    break
    return Counts(*totals), bad


def read_timings(results: Path) -> dict[str, float]:
    """``timings``: the guest's ``name uptime`` lines (missing file: nothing)."""
    marks: dict[str, float] = {}
    try:
        text = (results / "timings").read_text()
    except OSError:
        return marks
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        try:
            marks[name] = float(value)
        except ValueError:
            continue
    return marks


KERNEL_STUCK: Final = ("a guest CPU was reported stuck for 2 minutes or more (software "
                       "emulation livelocked the guest kernel)")


MAX_BOOTS: Final = 3
"""Boots of one shape at most when emulation, not the tests, failed it."""
REBOOT_BUDGET: Final = 1800.0
"""Seconds a shape's boots may have taken and still get another: CI's 90 minutes hold two
shapes, the other sessions and a guest that failed late."""


def boot_again(outcome: Outcome, boots: int, spent_s: float) -> bool:
    """Whether a shape whose last of ``boots`` boots ended with ``outcome``, ``spent_s`` after
    its first began, is booted once more: only when emulation failed it (the guest did not
    boot, or stalled: crashed, livelocked or stopped advancing), at most :data:`MAX_BOOTS`
    boots, within :data:`REBOOT_BUDGET`. A test's failure or a timeout is the tests' own."""
    return (outcome in (Outcome.NOT_BOOTED, Outcome.STALLED) and boots < MAX_BOOTS
            and spent_s < REBOOT_BUDGET)


def judge(shape: str, results: Path, *, wall_s: float, timed_out: bool,
          stalled: str = "") -> ShapeResult:
    """The result of the guest that wrote ``results`` (``stalled``: why it was stopped as
    stalled: its kernel reported a CPU stuck for minutes, :data:`KERNEL_STUCK`, or its
    heartbeat stopped, ``vm_heartbeat``; empty when it was not)."""
    if stalled:
        return ShapeResult(shape, Outcome.STALLED, boot_s=read_timings(results).get("booted"),
                           wall_s=wall_s, detail=stalled)
    marks = read_timings(results)
    boot = marks.get("booted")
    if boot is None:
        # Stopped at the boot limit or exited: either way the guest never ran a test, so it is
        # a boot failure (booted once more, its console printed), not a slow test run.
        detail = "the guest script never started" + (
            f" (stopped at the boot time limit, {wall_s:.0f} s)" if timed_out else "")
        return ShapeResult(shape, Outcome.NOT_BOOTED, wall_s=wall_s, detail=detail)
    tests_s = (marks["pytest-end"] - marks["pytest-start"]
               if "pytest-end" in marks and "pytest-start" in marks else None)
    try:
        counts, bad = read_counts(results / "junit.xml")
    except (OSError, ET.ParseError) as exc:
        return ShapeResult(shape, Outcome.TIMED_OUT if timed_out else Outcome.NO_RESULTS,
                           boot_s=boot, tests_s=tests_s, wall_s=wall_s,
                           detail=f"no readable junit.xml ({exc})")
    rc_text = _read(results / "pytest.rc")
    problems = []
    if timed_out:
        problems.append("the guest was stopped at its time limit")
    if rc_text != "0":
        problems.append(f"pytest exited with {rc_text or 'no code'}")
    if counts.tests == 0:
        problems.append("no test ran")
    if counts.failures or counts.errors or counts.skipped:
        problems.append(str(counts))
    outcome = (Outcome.PASSED if not problems
               else Outcome.TIMED_OUT if timed_out else Outcome.FAILED)
    return ShapeResult(shape, outcome, counts=counts, boot_s=boot, tests_s=tests_s,
                       wall_s=wall_s, failed_tests=bad, detail="; ".join(problems))


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def summary_table(results: list[ShapeResult]) -> str:
    """One line per shape: outcome, boot, tests, wall clock, counts."""
    def secs(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f} s"

    header = f"{'shape':<12} {'outcome':<20} {'boot':>7} {'tests':>7} {'wall':>7}  counts"
    return "\n".join([header, *(f"{r.shape:<12} {r.outcome.value:<20} {secs(r.boot_s):>7} "
                                 f"{secs(r.tests_s):>7} {secs(r.wall_s):>7}  {r.counts}"
                                 for r in results)])
