"""Issue 28: with the systemd cgroup driver, no ``systemctl daemon-reload`` may put a shared
container back on a CPU a pin or an integer container was just given.

The kernel fast path (decision 29) shrinks every shared container before a pin's or an
integer container's answer, and the runtime's record (runc, which also sets the scope's
``AllowedCPUs``) follows later, one container per answer of the runtime's own calls on
containerd 1.7 (decision 51). systemd
re-applies every unit's ``AllowedCPUs`` at each reload, so the plugin sets the shared scopes'
units over D-Bus with their files (decision 37). Here many shared containers run, a pin and
then an integer container arrive, and right after each start returns every scope's
``AllowedCPUs`` must equal its ``cpuset.cpus``; reloads then run at once and repeatedly until
the record has caught up, while every shared scope's ``cpuset.cpus`` is sampled every 50 ms:
not one sample may show a shared container on an exclusive CPU after the start returned.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cpuset_adapters.systemd.bus import BusError, SystemdBus
from cpuset_adapters.systemd.call import UnitCpuset
from cpuset_core.cpuset import CPUSet
from tests.vm import kernel, units
from tests.vm.runtime import RESULTS, SCALE, Guest, Pods, wait_consistent

SHARED = int(os.environ.get("NRI_CPUSET_VM_RELOAD_SHARED", "24"))
"""Shared containers running when the pin and the integer container arrive."""
SAMPLE_EVERY = 0.05
RELOAD_EVERY = 3.0
"""Seconds between two reloads while the runtime's record catches up. Under emulation a
reload of this systemd takes seconds, and runc's updates of the record wait for systemd:
reloading back to back (every 0.5 s was tried) kept it busy and the record took a minute per
two containers, until containerd's NRI call was given up on."""
CATCH_UP = 150.0
"""Guest seconds of reloads at most: the catch-up of 25 records under emulation, with
reloads beside it, may take longer; what lags then is reported, not failed (the question is
whether any reload puts a shared container back, and it was asked throughout)."""


@dataclass
class Sampler:
    """Reads every shared scope's ``cpuset.cpus`` every 50 ms in a thread of its own."""

    files: dict[str, Path]
    samples: list[tuple[float, str, CPUSet]] = field(default_factory=list)
    rounds: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            for cid, file in self.files.items():
                try:
                    cpus = CPUSet.parse(file.read_text().strip(), allow_empty=True)
                except OSError:
                    continue
                self.samples.append((time.monotonic(), cid, cpus))
            self.rounds += 1
            self._stop.wait(max(0.0, SAMPLE_EVERY - (time.monotonic() - started)))

    def on(self, cpus: CPUSet, since: float) -> list[str]:
        """Samples taken after ``since`` that show a shared container on any of ``cpus``."""
        return [f"{cid[:12]} on {seen} at +{at - since:.2f} s" for at, cid, seen in
                self.samples if at >= since and not seen.isdisjoint(cpus)]


def cpuset_file(guest: Guest, container_id: str) -> Path:
    pid = guest.cri.container_status(container_id).pid
    assert pid is not None
    return units.CGROUP / units.process_cgroup(pid).lstrip("/") / "cpuset.cpus"


def allowed_differs(guest: Guest) -> list[str]:
    """Scopes whose ``AllowedCPUs`` is not their ``cpuset.cpus``, from one ``systemctl``."""
    ids = [entry["id"] for entry in guest.state()["containers"]]
    allowed = units.allowed_cpus_of([units.scope(cid) for cid in ids])
    wrong = []
    for cid in ids:
        enforced = CPUSet.parse(cpuset_file(guest, cid).read_text().strip(), allow_empty=True)
        if allowed[units.scope(cid)] != enforced:
            wrong.append(f"{cid[:12]}: AllowedCPUs {allowed[units.scope(cid)]}, "
                         f"cpuset.cpus {enforced}")
    return wrong


def reload_while_catching_up(guest: Guest) -> tuple[int, float, list[str]]:
    """``daemon-reload`` at once, then every :data:`RELOAD_EVERY` seconds until nothing is
    left to go out by itself (at least three reloads) or :data:`CATCH_UP` seconds; returns how
    many reloads, how long, and the containers whose record still lags (on this runtime the
    records follow on its own calls only, decision 51)."""
    started, reloads = time.monotonic(), 0
    while True:
        units.systemctl("daemon-reload")
        reloads += 1
        state = guest.state()
        pending: list[str] = state["pending_updates"]
        elapsed = time.monotonic() - started
        if (not pending and reloads >= 3) or elapsed > CATCH_UP:
            return reloads, elapsed, pending + state["records_lagging"]
        time.sleep(RELOAD_EVERY)


@pytest.fixture(scope="module")
def crowd(guest: Guest) -> Iterator[tuple[Pods, list[str]]]:
    pods = Pods(guest)
    try:
        yield pods, [pods.shared(f"shared-{n}") for n in range(SHARED)]
    finally:
        pods.remove_all()


def test_no_daemon_reload_puts_a_shared_scope_back_on_a_pin_or_an_integer_containers_cpus(
        guest: Guest, crowd: tuple[Pods, list[str]]) -> None:
    pods, shared = crowd
    wait_consistent(guest, timeout=60)
    sampler = Sampler({cid: cpuset_file(guest, cid) for cid in [guest.web, *shared]}).start()
    figures = []
    try:
        began = time.monotonic()
        pin = pods.pinned("pin", str(kernel.online().last()))
        pin_returned = time.monotonic()
        wrong_after_pin = allowed_differs(guest)
        pin_reloads = reload_while_catching_up(guest)
        figures.append(f"pin over {SHARED + 1} shared: created and started in "
                       f"{pin_returned - began:.2f} s; {pin_reloads[0]} reloads in "
                       f"{pin_reloads[1]:.1f} s, records lagging then: {len(pin_reloads[2])}")
        began = time.monotonic()
        integer = pods.integer("integer", 2)
        integer_returned = time.monotonic()
        wrong_after_integer = allowed_differs(guest)
        integer_reloads = reload_while_catching_up(guest)
        figures.append(f"integer (2 CPUs) over {SHARED + 1} shared: created and started in "
                       f"{integer_returned - began:.2f} s; {integer_reloads[0]} reloads in "
                       f"{integer_reloads[1]:.1f} s, records lagging then: "
                       f"{len(integer_reloads[2])}")
    finally:
        sampler.stop()
    exclusive = {cid: CPUSet.parse(e["cpus"]) for e in guest.state()["containers"]
                 for cid in (pin, integer) if e["id"] == cid}
    on_pin = sampler.on(exclusive[pin], pin_returned)
    on_integer = sampler.on(exclusive[integer], integer_returned)
    figures.append(f"{len(sampler.samples)} samples in {sampler.rounds} rounds; on the pin's "
                   f"CPUs {exclusive[pin]}: {len(on_pin)}; on the integer container's CPUs "
                   f"{exclusive[integer]}: {len(on_integer)}")
    with (RESULTS / "systemd-reload.txt").open("a") as out:
        out.write("\n".join(figures) + "\n")
    problems = [
        *(f"shared on the pin's CPUs after its start returned: {s}" for s in on_pin[:5]),
        *(f"shared on the integer container's CPUs after its start returned: {s}"
          for s in on_integer[:5]),
        *(f"right after the pin's start: {w}" for w in wrong_after_pin[:5]),
        *(f"right after the integer container's start: {w}" for w in wrong_after_integer[:5])]
    assert not problems, "\n".join([*figures, *problems])
    wait_consistent(guest, timeout=60)


def test_200_unit_writes_through_the_plugins_client_are_all_answered_without_error(
        guest: Guest, crowd: tuple[Pods, list[str]]) -> None:
    """The plugin's D-Bus client against this systemd: every shared scope's AllowedCPUs set
    again to what it is, 200 calls, all sent before the replies are read, and then one call
    at a time (each reply awaited). Every call must be answered without an error; how long
    each way took goes to the results (under emulation systemd's own work per call dominates:
    pipelining saved nothing measurable in the run of 2026-11-26)."""
    _, shared = crowd
    requests = [UnitCpuset(units.scope(cid), CPUSet.parse(cpuset_file(guest, cid).read_text()))
                for cid in shared]
    batch = (requests * (200 // len(requests) + 1))[:200]
    # On systemd's private socket the client closes an idle connection after each call and
    # connects again for the next (a version query each time): the plugin's own bound is a
    # quarter of the runtime's request timeout; here it is scaled like every other wait
    # (1 s unscaled timed out one reconnection on 2026-11-29, raising BusError as it should).
    bus = SystemdBus(timeout=SCALE)
    version = bus.connect()
    started = time.monotonic()
    assert bus.set_cpusets(batch, wait=60) == {}
    pipelined = time.monotonic() - started
    started = time.monotonic()
    for index, request in enumerate(batch):
        try:
            assert bus.set_cpusets([request], wait=60) == {}
        except BusError as exc:
            # What PID 1 was doing when it stopped answering: its log, state and connections.
            _record_pid1(f"call {index + 1} of 200 one by one: {exc}")
            raise
    one_by_one = time.monotonic() - started
    bus.close()
    with (RESULTS / "systemd-reload.txt").open("a") as out:
        out.write(f"200 SetUnitProperties on systemd {version} via {bus.via}: pipelined "
                  f"{pipelined * 1000:.0f} ms, one by one {one_by_one * 1000:.0f} ms; "
                  f"{bus.nudges} connection(s) of 200 nudged (NUDGE_EVERY)\n")


def _record_pid1(what: str) -> None:
    """PID 1's recent log, its state and its unix connections, to the results."""
    commands = [["journalctl", "_PID=1", "-n", "120", "--no-pager", "-o", "short-monotonic"],
                ["grep", "-E", "State|Threads|voluntary", "/proc/1/status"],
                ["sh", "-c", "ls /proc/1/fd | wc -l; ss -xp | grep -c 'systemd\",pid=1'"],
                ["timeout", "30", "systemctl", "show", "-p", "Version", "-p", "NJobs"]]
    with (RESULTS / "systemd-pid1.txt").open("a") as out:
        out.write(f"== {what}\n")
        for command in commands:
            done = subprocess.run(command, capture_output=True, text=True, check=False,
                                  timeout=60)
            out.write(f"$ {' '.join(command)}\n{done.stdout}{done.stderr}\n")
