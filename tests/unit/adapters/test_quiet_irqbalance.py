"""irqbalance told which CPUs to leave alone while CPUs are quiet, and given its own set back
(issue 43): the CPUs it bans by itself as irqbalance 1.9.2 decides them, and the talk on a fake
daemon's socket (a real Unix socket that checks root credentials as irqbalance does), journaled
before it is told so that a plugin killed -9 gives it back at its next start."""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters.quiet.applier import QuietApplier, QuietReport
from cpuset_adapters.quiet.host import QuietHost
from cpuset_adapters.quiet.irqbalance import Irqbalances, IrqbalanceTeller
from cpuset_adapters.quiet.journal import QuietJournal
from cpuset_core.cpuset import CPUSet
from cpuset_core.irqbalance import GIVE_BACK, ban_message, own_banned
from cpuset_core.quiet import CpuQuiet, QuietState

PID = 4242


class FakeDaemon:
    """irqbalance's socket: records each message with the sender's uid; answers ``setup``."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.server.listen(4)
        self.messages: list[tuple[str, int | None]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data, ancillary, _, _ = conn.recvmsg(500, socket.CMSG_SPACE(12))
                uid = None
                for level, kind, payload in ancillary:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                        uid = struct.unpack("3i", payload[:12])[1]
                self.messages.append((data.decode(), uid))
                if data.startswith(b"setup"):
                    conn.sendall(b"SLEEP 10 BANNED 00000000")

    def close(self) -> None:
        self.server.close()


def irqbalance_process(proc: Path, pid: int, environ: dict[str, str]) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "comm").write_text("irqbalance\n")
    (proc / str(pid) / "environ").write_bytes(
        b"".join(f"{k}={v}".encode() + b"\0" for k, v in environ.items()))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    cpu = tmp_path / "sys/devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "isolated").write_text("\n")
    (tmp_path / "proc/1").mkdir(parents=True)
    (tmp_path / "proc/1/comm").write_text("init\n")
    return tmp_path


@pytest.fixture
def daemon(tree: Path) -> Iterator[FakeDaemon]:
    irqbalance_process(tree / "proc", PID, {"PATH": "/usr/bin",
                                            "IRQBALANCE_BANNED_CPULIST": "3"})
    fake = FakeDaemon(tree / f"run/irqbalance/irqbalance{PID}.sock")
    yield fake
    fake.close()


def daemons(tree: Path) -> Irqbalances:
    return Irqbalances(tree / "proc", tree / "sys", tree / "run", timeout=5.0)


def wait_for(daemon: FakeDaemon, count: int) -> list[str]:
    """The messages received: each is recorded before its connection closes, which the sender
    waits for, so no wait is needed."""
    assert len(daemon.messages) >= count, daemon.messages
    return [message for message, _ in daemon.messages]


# -- what it bans by itself, as irqbalance 1.9.2 decides ----------------------------------------

def test_its_own_set_is_the_banned_cpulist_from_its_environment() -> None:
    assert own_banned({"IRQBALANCE_BANNED_CPULIST": "1,4-5"}, CPUSet({7}), CPUSet()) == \
        CPUSet({1, 4, 5})


def test_the_deprecated_hex_mask_wins_over_the_list_as_in_irqbalance() -> None:
    env = {"IRQBALANCE_BANNED_CPUS": "00000030", "IRQBALANCE_BANNED_CPULIST": "1"}
    assert own_banned(env, CPUSet(), CPUSet()) == CPUSet({4, 5})


def test_without_either_it_bans_the_isolated_and_nohz_full_cpus() -> None:
    assert own_banned({"IRQBALANCE_BANNED_CPULIST": ""}, CPUSet({2}), CPUSet({3})) == \
        CPUSet({2, 3})


def test_an_unreadable_banned_list_is_refused() -> None:
    with pytest.raises(ValueError, match="x-"):
        own_banned({"IRQBALANCE_BANNED_CPULIST": "x-"}, CPUSet(), CPUSet())


def test_the_message_bans_its_own_cpus_and_the_quiet_ones_as_one_cpu_list() -> None:
    assert ban_message(CPUSet({3}), CPUSet({1, 2})) == "settings cpus 1-3"


def test_with_nothing_quiet_the_message_gives_its_own_set_back() -> None:
    assert ban_message(CPUSet({3}), CPUSet()) == GIVE_BACK == "settings cpus NULL"


# -- the daemons found, told and given back -----------------------------------------------------

def test_running_daemons_are_found_by_their_command_name_with_their_own_set(
        tree: Path, daemon: FakeDaemon) -> None:
    assert [(b.pid, b.own) for b in daemons(tree).running()] == [(PID, CPUSet({3}))]


def test_a_daemon_is_told_the_quiet_cpus_with_root_credentials_and_journaled_first(
        tree: Path, daemon: FakeDaemon) -> None:
    journal = QuietJournal(tree / "journal.json")
    report = QuietReport()
    IrqbalanceTeller(daemons(tree), journal).tell(CPUSet({1}), report)
    assert wait_for(daemon, 1) == ["settings cpus 1,3"]
    assert daemon.messages[0][1] == os.getuid()
    assert QuietJournal(tree / "journal.json").originals == {f"irqbalance:{PID}": "3"}
    assert report.changed == [f"irqbalance {PID}: settings cpus 1,3"]


def test_a_daemon_told_already_is_not_told_again_until_the_quiet_cpus_change(
        tree: Path, daemon: FakeDaemon) -> None:
    teller = IrqbalanceTeller(daemons(tree), QuietJournal(tree / "journal.json"))
    for quiet in (CPUSet({1}), CPUSet({1}), CPUSet({1, 2})):
        teller.tell(quiet, QuietReport())
    assert wait_for(daemon, 2) == ["settings cpus 1,3", "settings cpus 1-3"]


def test_a_daemon_gets_its_own_set_back_when_nothing_is_quiet_and_is_forgotten(
        tree: Path, daemon: FakeDaemon) -> None:
    journal = QuietJournal(tree / "journal.json")
    teller = IrqbalanceTeller(daemons(tree), journal)
    teller.tell(CPUSet({1}), QuietReport())
    report = QuietReport()
    teller.tell(CPUSet(), report)
    assert wait_for(daemon, 2)[-1] == GIVE_BACK
    assert journal.originals == {}
    assert not (tree / "journal.json").exists()
    assert report.restored == [f"irqbalance {PID}: {GIVE_BACK}"]


def test_a_plugin_killed_after_telling_gives_it_back_at_its_next_start(
        tree: Path, daemon: FakeDaemon) -> None:
    IrqbalanceTeller(daemons(tree), QuietJournal(tree / "journal.json")).tell(
        CPUSet({1}), QuietReport())
    restarted = IrqbalanceTeller(daemons(tree), QuietJournal(tree / "journal.json"))
    restarted.tell(CPUSet(), QuietReport())
    assert wait_for(daemon, 2) == ["settings cpus 1,3", GIVE_BACK]


def test_a_daemon_gone_since_it_was_told_is_forgotten_without_a_word(
        tree: Path, daemon: FakeDaemon) -> None:
    journal = QuietJournal(tree / "journal.json")
    IrqbalanceTeller(daemons(tree), journal).tell(CPUSet({1}), QuietReport())
    (tree / f"proc/{PID}/comm").write_text("bash\n")  # its PID now someone else's
    report = QuietReport()
    IrqbalanceTeller(daemons(tree), journal).tell(CPUSet(), report)
    assert journal.originals == {}
    assert report.problems == []
    assert len(daemon.messages) == 1


def test_a_daemon_that_cannot_be_reached_is_a_problem_tried_again_at_the_next_pass(
        tree: Path) -> None:
    irqbalance_process(tree / "proc", PID, {})
    journal = QuietJournal(tree / "journal.json")
    teller = IrqbalanceTeller(daemons(tree), journal)
    report = QuietReport()
    teller.tell(CPUSet({1}), report)
    assert report.changed == []
    assert "cannot be told 'settings cpus 1'" in report.problems[0]
    fake = FakeDaemon(tree / f"run/irqbalance/irqbalance{PID}.sock")
    try:
        teller.tell(CPUSet({1}), QuietReport())
        assert wait_for(fake, 1) == ["settings cpus 1"]
    finally:
        fake.close()


def test_nothing_quiet_and_nothing_journaled_reads_no_process(tmp_path: Path) -> None:
    teller = IrqbalanceTeller(daemons(tmp_path / "absent"), QuietJournal(tmp_path / "j.json"))
    teller.tell(CPUSet(), QuietReport())  # /proc of that tree does not exist: not read


def test_the_applier_tells_the_daemons_and_keeps_their_entries_apart_from_files(
        tree: Path, daemon: FakeDaemon) -> None:
    irq = tree / "proc/irq"
    (irq / "24").mkdir(parents=True)
    (irq / "24/smp_affinity_list").write_text("0-3\n")
    (irq / "default_smp_affinity").write_text("f\n")
    journal = QuietJournal(tree / "journal.json")
    applier = QuietApplier(QuietHost(tree / "proc", tree / "sys"), journal,
                           IrqbalanceTeller(daemons(tree), journal))
    online = CPUSet.range(0, 3)
    quiet = QuietState({1: CpuQuiet(irqs=("c1",))})
    applier.apply(quiet, online)
    assert (irq / "24/smp_affinity_list").read_text() == "0,2-3"
    assert f"irqbalance:{PID}" in journal.originals
    applier.apply(quiet, online)  # the daemon's entry is not mistaken for a file gone
    assert f"irqbalance:{PID}" in journal.originals
    applier.apply(QuietState(), online)
    assert wait_for(daemon, 2) == ["settings cpus 1,3", GIVE_BACK]
    assert journal.originals == {}
    assert (irq / "24/smp_affinity_list").read_text() == "0-3"
