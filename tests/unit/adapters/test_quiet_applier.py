"""Quiet CPUs on a fake /proc and /sys (issue 43): interrupts moved off the quiet CPUs, idle
states past the bound disabled, governors set, every original journaled on disk before the
first write and put back when no live container needs it, at the next pass or the next start.

The governor is tested here only: these machines have no cpufreq.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from cpuset_adapters.quiet.applier import QuietApplier
from cpuset_adapters.quiet.host import QuietHost, format_mask, parse_mask
from cpuset_adapters.quiet.journal import JournalError, QuietJournal
from cpuset_core.cpuset import CPUSet
from cpuset_core.quiet import QuietState, quiet_state
from cpuset_core.quiet_request import Quiet
from tests.unit.adapters.quiet_trees import MANAGED, ONLINE, FakeHost, holding, node, text

ALL = Quiet(irqs=True, idle_limit=2, governor="performance", keys=("k",))




def snapshot(tree: Path) -> dict[str, str]:
    return {str(p.relative_to(tree)): p.read_text().strip() for p in sorted(tree.rglob("*"))
            if p.is_file() and p.parent.name != "nri-cpuset"}


def test_a_quiet_cpu_loses_its_interrupts_deep_idle_states_and_governor(tmp_path: Path) -> None:
    host = node(tmp_path)
    applier = QuietApplier(host, QuietJournal(tmp_path / "run/journal.json"))
    report = applier.apply(quiet_state([holding("a", "2-3", ALL)]), ONLINE)
    assert text(tmp_path, "proc/irq/24/smp_affinity_list") == "0-1"
    assert text(tmp_path, "proc/irq/25/smp_affinity_list") == "0-1"  # none of its own left
    assert text(tmp_path, "proc/irq/default_smp_affinity") == "3"
    assert text(tmp_path, f"proc/irq/{MANAGED}/smp_affinity_list") == "0-3"
    assert report.skipped == [f"IRQ {MANAGED}: the kernel keeps its affinity (a write is refused "
                              f"with EIO: a managed or fixed vector); left as it is"]
    cpu2 = "sys/devices/system/cpu/cpu2"
    assert [text(tmp_path, f"{cpu2}/cpuidle/state{k}/disable") for k in range(3)] == [
        "0", "0", "1"]
    assert text(tmp_path, "sys/devices/system/cpu/cpu1/cpuidle/state2/disable") == "0"
    assert text(tmp_path, f"{cpu2}/cpufreq/scaling_governor") == "performance"
    assert text(tmp_path, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor") == "schedutil"
    assert report.problems == []


def test_the_originals_are_on_disk_before_the_first_write(tmp_path: Path) -> None:
    host = node(tmp_path)
    journal_path = tmp_path / "run/journal.json"
    seen: list[dict[str, str]] = []

    class Watching(FakeHost):
        def write(self, path: str, value: str) -> None:
            seen.append(json.loads(journal_path.read_text())["originals"])
            super().write(path, value)

    watched = Watching(host.irq_root.parent, host.cpu_root.parents[2])
    QuietApplier(watched, QuietJournal(journal_path)).apply(
        quiet_state([holding("a", "3", ALL)]), ONLINE)
    assert seen, "nothing was written"
    first = seen[0]
    assert first[str(tmp_path / "proc/irq/24/smp_affinity_list")] == "0-3"
    assert first[str(tmp_path / "proc/irq/default_smp_affinity")] == "f"
    assert first[str(tmp_path / "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor")] == (
        "schedutil")


def test_the_last_holder_leaving_puts_everything_back(tmp_path: Path) -> None:
    host = node(tmp_path)
    before = snapshot(tmp_path)
    journal = QuietJournal(tmp_path / "run/journal.json")
    applier = QuietApplier(host, journal)
    a, b = holding("a", "3", ALL), holding("b", "3", Quiet(irqs=True, keys=("k",)))
    applier.apply(quiet_state([a, b]), ONLINE)
    applier.apply(quiet_state([b]), ONLINE)  # b still holds CPU 3 quiet for interrupts
    assert text(tmp_path, "proc/irq/24/smp_affinity_list") == "0-2"
    assert text(tmp_path, "sys/devices/system/cpu/cpu3/cpuidle/state2/disable") == "0"
    assert text(tmp_path, "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor") == "schedutil"
    applier.apply(quiet_state([]), ONLINE)
    assert snapshot(tmp_path) == before
    assert journal.originals == {}
    assert not (tmp_path / "run/journal.json").exists()


def test_a_plugin_killed_while_quiet_restores_at_its_next_start(tmp_path: Path) -> None:
    host = node(tmp_path)
    before = snapshot(tmp_path)
    QuietApplier(host, QuietJournal(tmp_path / "run/journal.json")).apply(
        quiet_state([holding("a", "1-2", ALL)]), ONLINE)
    assert snapshot(tmp_path) != before
    # The next start: a new journal read from disk, the ledger rebuilt without the pod.
    restarted = QuietApplier(node_again(tmp_path), QuietJournal(tmp_path / "run/journal.json"))
    report = restarted.apply(QuietState(), ONLINE)
    assert snapshot(tmp_path) == before
    assert report.problems == []


def test_a_restart_with_the_pod_still_there_keeps_the_nodes_originals(tmp_path: Path) -> None:
    host = node(tmp_path)
    state = quiet_state([holding("a", "2", ALL)])
    QuietApplier(host, QuietJournal(tmp_path / "run/journal.json")).apply(state, ONLINE)
    restarted = QuietApplier(node_again(tmp_path), QuietJournal(tmp_path / "run/journal.json"))
    restarted.apply(state, ONLINE)
    assert restarted.journal.originals[str(tmp_path / "proc/irq/25/smp_affinity_list")] == "2"
    restarted.apply(QuietState(), ONLINE)
    assert text(tmp_path, "proc/irq/25/smp_affinity_list") == "2"


def node_again(tree: Path) -> FakeHost:
    return FakeHost(tree / "proc", tree / "sys")


def test_interrupts_stay_when_every_online_cpu_would_be_quiet(tmp_path: Path) -> None:
    host = node(tmp_path)
    report = QuietApplier(host, QuietJournal(tmp_path / "j.json")).apply(
        quiet_state([holding("a", "0-3", Quiet(irqs=True, keys=("k",)))]), ONLINE)
    assert text(tmp_path, "proc/irq/24/smp_affinity_list") == "0-3"
    assert report.problems == ["interrupts: every online CPU (0-3) is quiet; interrupts stay "
                               "where they are"]


def test_an_unavailable_governor_is_a_problem_and_nothing_is_written(tmp_path: Path) -> None:
    host = node(tmp_path)
    report = QuietApplier(host, QuietJournal(tmp_path / "j.json")).apply(
        quiet_state([holding("a", "1", Quiet(governor="ondemand", keys=("k",)))]), ONLINE)
    assert report.problems == ["governor: CPU 1 cannot run 'ondemand'"]
    assert text(tmp_path, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor") == "schedutil"


def test_why_not_says_what_this_node_lacks(tmp_path: Path) -> None:
    host = node(tmp_path, cpufreq=False)
    assert host.why_not(ALL, CPUSet((1,))) == ["governor: CPU 1 has no cpufreq"]
    assert host.why_not(Quiet(governor="turbo"), CPUSet((1,))) == [
        "governor: CPU 1 has no cpufreq"]
    assert QuietHost(tmp_path / "nothing", tmp_path / "nothing").why_not(ALL, CPUSet((1,))) == [
        f"interrupts: no {tmp_path}/nothing/irq/default_smp_affinity",
        "idle states: no cpuidle states for CPU(s) 1", "governor: CPU 1 has no cpufreq"]
    assert node(tmp_path / "full").why_not(ALL, CPUSet((1,))) == []


def test_why_not_says_which_files_are_read_only_here(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # As the DaemonSet's pod sees them (/proc/irq read-only under runc, /sys mounted
    # read-only); root passes every permission check, so the mount is what refuses: faked.
    host = node(tmp_path)
    writable = os.access
    monkeypatch.setattr("os.access", lambda path, mode: writable(path, mode) and not any(
        part in str(path) for part in ("/irq/", "/cpuidle/", "/power/", "/cpufreq/")))
    assert host.why_not(ALL, CPUSet((1, 2))) == [
        f"interrupts: {tmp_path}/proc/irq is read-only here",
        "idle states: cpuidle of CPU(s) 1-2 is read-only here, and their PM QoS resume "
        "latency (power/pm_qos_resume_latency_us) is read-only here",
        "governor: cpufreq of CPU 1 is read-only here"]


def test_a_write_that_fails_is_reported_and_its_original_not_kept(tmp_path: Path) -> None:
    host = node(tmp_path)

    class ReadOnlyIdle(FakeHost):
        def write(self, path: str, value: str) -> None:
            if path.endswith("disable"):
                raise OSError(errno.EROFS, "Read-only file system")
            super().write(path, value)

    applier = QuietApplier(ReadOnlyIdle(host.irq_root.parent, host.cpu_root.parents[2]),
                           QuietJournal(tmp_path / "j.json"))
    report = applier.apply(quiet_state([holding("a", "1", Quiet(idle_limit=0, keys=("k",)))]),
                           ONLINE)
    assert len(report.problems) == 2  # C1 and C6 of CPU 1
    assert "Read-only file system" in report.problems[0]
    assert applier.journal.originals == {}


@pytest.mark.parametrize(("mask", "cpus"), [
    ("f", "0-3"), ("00000000,00000001", "0"), ("1,00000000", "32"), ("0", ""),
    ("ffffffff,ffffffff", "0-63"),
])
def test_kernel_masks_read_and_write_as_the_kernel_does(mask: str, cpus: str) -> None:
    assert parse_mask(mask) == CPUSet.parse(cpus, allow_empty=True)
    assert parse_mask(format_mask(parse_mask(mask))) == parse_mask(mask)
    assert format_mask(CPUSet.parse("32")) == "1,00000000"


@pytest.mark.parametrize("content", ["not json", "[]", '{"version": 2, "originals": {}}',
                                     '{"version": 1, "originals": {"a": 1}}'])
def test_a_journal_that_is_not_ours_is_refused_not_guessed(tmp_path: Path, content: str) -> None:
    (tmp_path / "j.json").write_text(content)
    with pytest.raises(JournalError):
        QuietJournal(tmp_path / "j.json")


def test_a_journal_that_cannot_be_written_stops_the_pass_before_any_write(
        tmp_path: Path) -> None:
    host = node(tmp_path)
    applier = QuietApplier(host, QuietJournal(tmp_path / "blocked/j.json"))
    (tmp_path / "blocked").write_text("a file where the journal's directory should be")
    with pytest.raises(JournalError):
        applier.apply(quiet_state([holding("a", "1", ALL)]), ONLINE)
    assert text(tmp_path, "proc/irq/24/smp_affinity_list") == "0-3"


def test_an_irq_that_went_away_is_forgotten(tmp_path: Path) -> None:
    host = node(tmp_path)
    applier = QuietApplier(host, QuietJournal(tmp_path / "j.json"))
    applier.apply(quiet_state([holding("a", "1", Quiet(irqs=True, keys=("k",)))]), ONLINE)
    (tmp_path / "proc/irq/24/smp_affinity_list").unlink()
    report = applier.apply(QuietState(), ONLINE)
    assert report.problems == []
    assert applier.journal.originals == {}
