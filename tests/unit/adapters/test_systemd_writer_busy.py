"""A busy systemd (PID 1 in a ``daemon-reload``) is not a missing bus, and no unit write is
lost to either: the VM lab's systemd shape saw a 1 s connect bound treated as no bus, a 60 s
pause, and shared scopes reverted onto an integer container's CPUs by every reload until an
update finally reached systemd minutes later. Here: busy is asked again after one hook's span
(not at every step of a hook, whose NRI request timeout it would eat), and the units a failed
step could not send go with the next step that reaches systemd."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cpuset_adapters.cgroup_writer import KernelCpusetWriter
from cpuset_adapters.systemd.bus import BusError
from cpuset_adapters.systemd.scope_writer import (
    BUSY_PAUSE_STEPS,
    REPLY_WAIT,
    RETRY_AFTER,
    SystemdScopeWriter,
)
from tests.unit.adapters.cgroup_trees import V2_PATH, cgroup, update, v2_tree
from tests.unit.adapters.systemd_fakes import Clock, Counts, FakeBus

WEB = "cri-containerd-c-web.scope"
DB = "cri-containerd-c-db.scope"
BUSY = BusError("busy", "no answer from the bus within 0.5 s")
NO_BUS = BusError("no-bus", "/run/dbus/system_bus_socket: no such file")
BUSY_PAUSE = BUSY_PAUSE_STEPS * REPLY_WAIT
"""How long a busy systemd is left alone at the default step wait (one hook's span)."""


def build(root: Path, bus: FakeBus) -> tuple[SystemdScopeWriter, Counts, Clock]:
    """Two shared containers in scopes of one pod: c-web and c-db."""
    v2_tree(root)
    cgroup(root / "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"
                  "/cri-containerd-c-db.scope")
    paths = {"c-web": V2_PATH, "c-db": V2_PATH.replace("c-web", "c-db")}
    counts, clock = Counts(), Clock()
    writer = SystemdScopeWriter(KernelCpusetWriter(root, paths.get), paths.get, bus,
                                count=counts, clock=clock)
    return writer, counts, clock


def sent(bus: FakeBus, call: int) -> dict[str, str]:
    """What one call set: unit -> CPUs."""
    return {r.unit: str(r.cpus) for r in bus.calls[call]}


def test_busy_at_connect_writes_the_files_warns_once_and_asks_again_after_one_hooks_span(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bus = FakeBus(refuse=BUSY)
    writer, counts, clock = build(tmp_path, bus)
    with caplog.at_level(logging.WARNING, "nri_cpuset.kernel"):
        assert writer.apply([update(cpus="2-15")]).ok
        assert writer.apply([update(cpus="3-15")]).ok  # the same hook: not asked again
        assert bus.connects == 1
        clock.now += BUSY_PAUSE  # the next hook, not a minute later
        assert writer.apply([update(cpus="3-15")]).ok
    assert bus.connects == 2
    assert BUSY_PAUSE < RETRY_AFTER
    assert counts.seen == {"busy": 3}
    assert [r.outcome for r in caplog.records] == ["busy"]
    assert "did not answer in time" in caplog.records[0].getMessage()
    scope = tmp_path / "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"
    assert (scope / "cri-containerd-c-web.scope/cpuset.cpus").read_text() == "3-15"


def test_the_connection_waits_the_steps_bound(tmp_path: Path) -> None:
    bus = FakeBus()
    writer, _, _ = build(tmp_path, bus)
    writer.budget(8.0)
    writer.apply([update()])
    assert bus.waits == [2.0]


def test_units_a_busy_step_could_not_send_go_with_the_next_step_then_not_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bus = FakeBus(refuse=BUSY)
    writer, counts, clock = build(tmp_path, bus)
    writer.apply([update("c-web", "2-15"), update("c-db", "2-15")])
    bus.refuse = None
    clock.now += BUSY_PAUSE
    with caplog.at_level(logging.INFO, "nri_cpuset.kernel"):
        writer.apply([update("c-db", "4-15")])
    assert sent(bus, 0) == {WEB: "2-15", DB: "4-15"}  # c-web's from the failed step
    writer.apply([update("c-db", "5-15")])
    assert sent(bus, 1) == {DB: "5-15"}
    assert counts.seen == {"busy": 2, "set": 3}
    again = [r for r in caplog.records if "set again" in r.getMessage()]
    assert len(again) == 1
    assert (again[0].after, again[0].resent) == ("busy", 1)


@pytest.mark.parametrize(("container", "expected"), [
    ("c-web", {WEB: "4-15"}),  # the step's own value replaces the pending one
    ("c-db", {WEB: "3-15", DB: "4-15"}),  # the latest pending value goes with another's
])
def test_a_unit_written_twice_while_busy_is_sent_once_with_its_latest_value(
        tmp_path: Path, container: str, expected: dict[str, str]) -> None:
    bus = FakeBus(refuse=BUSY)
    writer, _, clock = build(tmp_path, bus)
    writer.apply([update("c-web", "2-15")])
    writer.apply([update("c-web", "3-15")])
    bus.refuse = None
    clock.now += BUSY_PAUSE
    writer.apply([update(container, "4-15")])
    assert len(bus.calls) == 1
    assert sent(bus, 0) == expected


def test_units_lost_with_the_connection_mid_call_are_sent_again(tmp_path: Path) -> None:
    bus = FakeBus(fail=BusError("no-bus", "the bus closed the connection"))
    writer, counts, clock = build(tmp_path, bus)
    writer.apply([update("c-web", "2-15")])
    bus.fail = None
    clock.now += RETRY_AFTER
    writer.apply([update("c-db", "4-15")])
    assert sent(bus, 0) == {WEB: "2-15", DB: "4-15"}
    assert counts.seen == {"no-bus": 1, "set": 2}


def test_units_sent_and_not_answered_in_time_are_not_sent_again(tmp_path: Path) -> None:
    bus = FakeBus(problems={WEB: "timeout"})
    writer, counts, _ = build(tmp_path, bus)
    writer.apply([update("c-web", "2-15")])
    bus.problems.clear()
    writer.apply([update("c-db", "4-15")])
    assert sent(bus, 1) == {DB: "4-15"}  # systemd applies the first when it gets to it
    assert counts.seen == {"timeout": 1, "set": 1}


def test_units_left_unsent_by_a_full_window_are_busy_and_sent_again(tmp_path: Path) -> None:
    """systemd owes a window of replies (a reload): the calls past it never went out."""
    bus = FakeBus(problems={WEB: "unsent"})
    writer, counts, _ = build(tmp_path, bus)
    writer.apply([update("c-web", "2-15"), update("c-db", "2-15")])
    bus.problems.clear()
    writer.apply([update("c-db", "4-15")])
    writer.apply([update("c-db", "5-15")])
    assert [sent(bus, n) for n in (1, 2)] == [{DB: "4-15", WEB: "2-15"}, {DB: "5-15"}]
    assert counts.seen == {"set": 4, "busy": 1}


def test_a_pending_unit_gone_meanwhile_is_dropped(tmp_path: Path) -> None:
    bus = FakeBus(refuse=BUSY)
    writer, counts, clock = build(tmp_path, bus)
    writer.apply([update("c-web", "2-15")])
    bus.refuse = None
    clock.now += BUSY_PAUSE
    bus.problems = {WEB: "org.freedesktop.systemd1.NoSuchUnit: Unit not loaded."}
    writer.apply([update("c-db", "4-15")])
    writer.apply([update("c-db", "5-15")])
    assert [sent(bus, n) for n in (0, 1)] == [{WEB: "2-15", DB: "4-15"}, {DB: "5-15"}]
    assert counts.seen == {"busy": 1, "set": 2, "gone": 1}


def test_no_bus_keeps_its_pause_and_sends_the_pending_units_after_it(tmp_path: Path) -> None:
    bus = FakeBus(refuse=NO_BUS)
    writer, counts, clock = build(tmp_path, bus)
    writer.apply([update("c-web", "2-15")])
    writer.apply([update("c-db", "3-15")])
    assert bus.connects == 1  # paused
    bus.refuse = None
    clock.now += RETRY_AFTER
    writer.apply([update("c-db", "4-15")])
    assert sent(bus, 0) == {WEB: "2-15", DB: "4-15"}
    assert counts.seen == {"no-bus": 2, "set": 2}


def test_switched_off_nothing_pending_is_sent_when_switched_on_again(tmp_path: Path) -> None:
    """Files written while off are newer than what was pending: it must not overwrite them."""
    bus = FakeBus(refuse=BUSY)
    writer, _, clock = build(tmp_path, bus)
    writer.apply([update("c-web", "2-15")])
    writer.switch(enabled=False)
    writer.apply([update("c-web", "3-15")])
    writer.switch(enabled=True)
    bus.refuse = None
    clock.now += BUSY_PAUSE
    writer.apply([update("c-db", "4-15")])
    assert sent(bus, 0) == {DB: "4-15"}
