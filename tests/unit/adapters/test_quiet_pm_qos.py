"""An idle bound without CAP_SYS_ADMIN (issue 43, the DaemonSet's pod): carried by the CPU's PM
QoS resume latency (``cpuN/power/pm_qos_resume_latency_us``, ``n/a`` for 0 µs since ``0``
means no constraint), its original journaled before the write and put back when no container
needs it, at the next pass or the next start; with CAP_SYS_ADMIN the states' ``disable`` as
before; where neither can be written, unmet, naming both."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from cpuset_adapters.quiet.applier import QuietApplier
from cpuset_adapters.quiet.idle import CPUIDLE, NONE, PM_QOS, pm_qos_bound, pm_qos_text
from cpuset_adapters.quiet.journal import QuietJournal
from cpuset_core.cpuset import CPUSet
from cpuset_core.quiet import QuietState, quiet_state
from cpuset_core.quiet_request import Quiet
from tests.unit.adapters.quiet_trees import ONLINE, FakeHost, holding, node, text

IDLE0 = Quiet(idle_limit=0, keys=("cpu-c-states.crio.io",))
CPU2 = "sys/devices/system/cpu/cpu2"
QOS2 = f"{CPU2}/power/pm_qos_resume_latency_us"


def idle(tree: Path, cpu: int) -> list[str]:
    return [text(tree, f"sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}/disable")
            for k in range(3)]


def applier(tree: Path, *, admin: bool = False) -> QuietApplier:
    return QuietApplier(FakeHost(tree / "proc", tree / "sys", admin=admin),
                        QuietJournal(tree / "run/journal.json"))


@pytest.mark.parametrize(("bound", "written"), [(0, "n/a"), (1, "1"), (10, "10"), (150, "150")])
def test_the_bound_is_spelled_as_the_kernel_reads_it(bound: int, written: str) -> None:
    assert pm_qos_text(bound) == written
    assert pm_qos_bound(written) == bound


@pytest.mark.parametrize(("shown", "bound"), [("0", None), ("n/a", 0), ("20\n", 20)])
def test_what_the_file_shows_is_read_as_a_bound(shown: str, bound: int | None) -> None:
    assert pm_qos_bound(shown) == bound


@pytest.mark.parametrize("shown", ["", "abc", "-1", "1.5"])
def test_a_value_the_kernel_would_not_show_is_refused(shown: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - int()'s message or ours, both name it
        pm_qos_bound(shown)


def test_without_cap_sys_admin_the_bound_goes_to_the_pm_qos_file(tmp_path: Path) -> None:
    node(tmp_path)
    report = applier(tmp_path).apply(quiet_state([holding("a", "2", IDLE0)]), ONLINE)
    assert text(tmp_path, QOS2) == "n/a"  # 0 µs: polling only; "0" would mean no constraint
    assert idle(tmp_path, 2) == ["0", "0", "0"]  # the states are not touched
    assert text(tmp_path, "sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us") == "0"
    assert report.idle_via == {2: PM_QOS}
    assert report.changed == [str(tmp_path / QOS2)]
    assert report.problems == []


def test_a_bound_of_some_microseconds_is_written_as_it_is(tmp_path: Path) -> None:
    node(tmp_path)
    bounded = Quiet(idle_limit=10, keys=("cpu-c-states.crio.io",))
    applier(tmp_path).apply(quiet_state([holding("a", "2", bounded)]), ONLINE)
    assert text(tmp_path, QOS2) == "10"


def test_with_cap_sys_admin_the_states_are_disabled_and_pm_qos_left(tmp_path: Path) -> None:
    node(tmp_path)
    report = applier(tmp_path, admin=True).apply(quiet_state([holding("a", "2", IDLE0)]),
                                                 ONLINE)
    assert idle(tmp_path, 2) == ["0", "1", "1"]
    assert text(tmp_path, QOS2) == "0"
    assert report.idle_via == {2: CPUIDLE}


def test_the_original_is_journaled_before_the_write_and_put_back(tmp_path: Path) -> None:
    node(tmp_path)
    journal = tmp_path / "run/journal.json"
    seen: list[dict[str, str]] = []

    class Watching(FakeHost):
        def write(self, path: str, value: str) -> None:
            seen.append(json.loads(journal.read_text())["originals"])
            super().write(path, value)

    watched = QuietApplier(Watching(tmp_path / "proc", tmp_path / "sys", admin=False),
                           QuietJournal(journal))
    watched.apply(quiet_state([holding("a", "2", IDLE0)]), ONLINE)
    assert seen == [{str(tmp_path / QOS2): "0"}]
    report = watched.apply(QuietState(), ONLINE)  # the last holder went
    assert report.restored == [str(tmp_path / QOS2)]
    assert text(tmp_path, QOS2) == "0"
    assert not journal.exists()


def test_a_plugin_killed_while_bounded_puts_it_back_at_its_next_start(tmp_path: Path) -> None:
    node(tmp_path)
    applier(tmp_path).apply(quiet_state([holding("a", "1-2", IDLE0)]), ONLINE)
    assert text(tmp_path, QOS2) == "n/a"
    report = applier(tmp_path).apply(QuietState(), ONLINE)  # the pod went while it was down
    assert text(tmp_path, QOS2) == "0"
    assert text(tmp_path, "sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us") == "0"
    assert sorted(report.restored) == [str(tmp_path / f"sys/devices/system/cpu/cpu{c}/power/"
                                                      "pm_qos_resume_latency_us") for c in (1, 2)]
    assert report.problems == []


def test_a_restart_with_the_pod_still_there_keeps_the_nodes_original(tmp_path: Path) -> None:
    node(tmp_path)
    state = quiet_state([holding("a", "2", IDLE0)])
    applier(tmp_path).apply(state, ONLINE)
    restarted = applier(tmp_path)
    assert restarted.apply(state, ONLINE).changed == []
    assert restarted.journal.originals == {str(tmp_path / QOS2): "0"}  # not its own "n/a"
    restarted.apply(QuietState(), ONLINE)
    assert text(tmp_path, QOS2) == "0"


def test_a_tighter_constraint_the_node_had_is_never_loosened(tmp_path: Path) -> None:
    node(tmp_path)
    (tmp_path / QOS2).write_text("5\n")
    quiet = applier(tmp_path)
    report = quiet.apply(quiet_state([holding("a", "2", Quiet(idle_limit=10, keys=("k",)))]),
                         ONLINE)
    assert (text(tmp_path, QOS2), report.changed, report.idle_via) == ("5", [], {2: PM_QOS})
    quiet.apply(quiet_state([holding("a", "2", IDLE0)]), ONLINE)  # tighter than the node's
    assert text(tmp_path, QOS2) == "n/a"
    quiet.apply(QuietState(), ONLINE)
    assert text(tmp_path, QOS2) == "5"


def test_a_file_that_is_not_a_resume_latency_is_a_problem_and_left(tmp_path: Path) -> None:
    node(tmp_path)
    (tmp_path / QOS2).write_text("fast\n")
    quiet = applier(tmp_path)
    report = quiet.apply(quiet_state([holding("a", "2", IDLE0)]), ONLINE)
    assert report.problems == [f"{tmp_path / QOS2}: reads 'fast', not a resume latency (µs, "
                               "'n/a' or '0'); left as it is"]
    assert text(tmp_path, QOS2) == "fast"
    assert quiet.journal.originals == {}


def test_a_file_that_refuses_the_write_is_a_problem_and_its_original_not_kept(
        tmp_path: Path) -> None:
    node(tmp_path)

    class Refusing(FakeHost):
        def write(self, path: str, value: str) -> None:
            if path.endswith("pm_qos_resume_latency_us"):
                raise OSError(errno.EINVAL, "Invalid argument")
            super().write(path, value)

    quiet = QuietApplier(Refusing(tmp_path / "proc", tmp_path / "sys", admin=False),
                         QuietJournal(tmp_path / "j.json"))
    report = quiet.apply(quiet_state([holding("a", "2", IDLE0)]), ONLINE)
    assert report.problems == [f"{tmp_path / QOS2}: cannot write 'n/a': Invalid argument"]
    assert quiet.journal.originals == {}
    assert text(tmp_path, QOS2) == "0"


def test_neither_file_writable_is_unmet_naming_both_and_nothing_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The base DaemonSet's read-only /host/sys: root passes the mode check, so the mount's
    # refusal (EROFS from access(2)) is faked.
    host = node(tmp_path, admin=False)
    writable = os.access
    monkeypatch.setattr("os.access", lambda path, mode: writable(path, mode) and not any(
        part in str(path) for part in ("/cpuidle/", "/power/")))
    assert host.why_not(IDLE0, CPUSet((1, 2))) == [
        "idle states: cpuidle of CPU(s) 1-2 is read-only here, and their PM QoS resume latency "
        "(power/pm_qos_resume_latency_us) is read-only here"]
    report = QuietApplier(host, QuietJournal(tmp_path / "j.json")).apply(
        quiet_state([holding("a", "2", IDLE0)]), ONLINE)
    assert report.idle_via == {2: NONE}
    assert report.skipped == [
        "idle states of CPU 2: bound 0 µs not carried (cpuidle of CPU(s) 2 is read-only here; "
        "their PM QoS resume latency (power/pm_qos_resume_latency_us) is read-only here)"]
    assert (report.changed, report.problems) == ([], [])


def test_without_cap_sys_admin_and_no_pm_qos_file_the_reason_says_both(tmp_path: Path) -> None:
    host = node(tmp_path, pm_qos=False, admin=False)
    assert host.why_not(IDLE0, CPUSet((0, 3))) == [
        "idle states: disabling one needs CAP_SYS_ADMIN, which this process lacks, and CPU(s) "
        "0,3 have no PM QoS resume latency (power/pm_qos_resume_latency_us)"]
    assert node(tmp_path / "qos", admin=False).why_not(IDLE0, CPUSet((0, 3))) == []
    assert node(tmp_path / "root", pm_qos=False, admin=True).why_not(IDLE0, CPUSet((0,))) == []


def test_a_bound_carried_in_cpuidle_moves_to_pm_qos_after_a_restart_without_it(
        tmp_path: Path) -> None:
    """An upgrade from a root plugin to the DaemonSet's pod with the pod still running: the
    journal's ``disable`` originals are put back and the bound is carried by PM QoS."""
    node(tmp_path)
    state = quiet_state([holding("a", "2", IDLE0)])
    applier(tmp_path, admin=True).apply(state, ONLINE)
    assert idle(tmp_path, 2) == ["0", "1", "1"]
    report = applier(tmp_path, admin=False).apply(state, ONLINE)
    assert (idle(tmp_path, 2), text(tmp_path, QOS2)) == (["0", "0", "0"], "n/a")
    assert report.idle_via == {2: PM_QOS}
