"""The plugin's D-Bus client for systemd: the SetUnitProperties call as systemd reads it (the
message against jeepney's marshalling and a reading by the specification, the CPU mask as
systemd's ``cpu_set_from_dbus`` decodes it), calls pipelined within the bus's reply limit,
errors and silence per unit, and a bus that is missing, too old or goes away."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jeepney import DBusAddress, new_method_call

from cpuset_adapters.systemd.bus import (
    NUDGE_EVERY,
    UNSENT,
    WINDOW,
    BusError,
    SystemdBus,
    system_bus_path,
)
from cpuset_adapters.systemd.call import UnitCpuset, cpu_mask, set_properties_call
from cpuset_core import CPUSet
from tests.unit.adapters.dbus_peer import FakeSystemdBus, unit_of

UNIT = "cri-containerd-" + "ab" * 32 + ".scope"
HANG_GUARD = 60.0
"""A wait the code under test must not wait out: a test that hangs fails after it, while a
short bound would be a verdict on speed."""
MANAGER = DBusAddress("/org/freedesktop/systemd1", bus_name="org.freedesktop.systemd1",
                      interface="org.freedesktop.systemd1.Manager")


def systemd_reads(mask: bytes) -> CPUSet:
    """What systemd's cpu_set_from_dbus makes of a mask: bit ``i % 8`` of byte ``i // 8``."""
    return CPUSet(i for i in range(len(mask) * 8) if mask[i // 8] & (1 << (i % 8)))


@pytest.mark.parametrize(("cpus", "mask"), [
    ("0", b"\x01"), ("1", b"\x02"), ("0-3", b"\x0f"), ("4-7", b"\xf0"), ("0-15", b"\xff\xff"),
    ("16", b"\x00\x00\x01"), ("0-3,32-33", b"\x0f\x00\x00\x00\x03"),
])
def test_a_cpu_list_becomes_systemds_little_endian_mask(cpus: str, mask: bytes) -> None:
    assert cpu_mask(CPUSet.parse(cpus)) == mask


@given(st.frozensets(st.integers(min_value=0, max_value=8191), min_size=1))
def test_systemd_reads_back_exactly_the_cpus_of_any_mask(cpus: frozenset[int]) -> None:
    assert systemd_reads(cpu_mask(CPUSet(cpus))) == CPUSet(cpus)


@pytest.mark.parametrize(("cpus", "mems"), [("0", None), ("1-27", "0"),
                                            ("0-3,32-33,100", "0-1"), ("8191", None)])
def test_the_call_is_byte_for_byte_what_jeepney_marshals(cpus: str, mems: str | None) -> None:
    request = UnitCpuset(UNIT, CPUSet.parse(cpus), CPUSet.parse(mems) if mems else None)
    properties = [("AllowedCPUs", ("ay", cpu_mask(request.cpus)))]
    if request.mems is not None:
        properties.append(("AllowedMemoryNodes", ("ay", cpu_mask(request.mems))))
    expected = new_method_call(MANAGER, "SetUnitProperties", "sba(sv)",
                               (UNIT, True, properties)).serialise(serial=7)
    assert set_properties_call(7, request) == expected


def test_the_calls_body_reads_by_the_specification_as_unit_runtime_and_two_byte_arrays() -> None:
    call = set_properties_call(3, UnitCpuset("a.scope", CPUSet.parse("2-3"), CPUSet.parse("1")))
    endian, kind, _flags, version, body_length, serial, fields_length = struct.unpack_from(
        "<cBBBIII", call)
    assert (endian, kind, version, serial) == (b"l", 1, 1, 3)  # little-endian method call
    body = call[-body_length:]
    assert b"sba(sv)" in call[16:16 + fields_length]
    # s: length 7, "a.scope", NUL; pad to 4; b: 1 (runtime); array length, pad to 8
    assert body[:12] == struct.pack("<I", 7) + b"a.scope\0"
    assert struct.unpack_from("<I", body, 12) == (1,)
    (array_length,) = struct.unpack_from("<I", body, 16)
    entries = body[24:24 + array_length]
    assert entries.startswith(struct.pack("<I", 11) + b"AllowedCPUs\0" + b"\x02ay\0")
    assert struct.pack("<I", 1) + b"\x0c" in entries  # one byte: CPUs 2 and 3
    assert b"AllowedMemoryNodes\0\x02ay\0" in entries
    assert entries.endswith(struct.pack("<I", 1) + b"\x02")  # node 1


def test_the_system_bus_is_found_as_dbus_clients_find_it() -> None:
    assert system_bus_path({}) == "/run/dbus/system_bus_socket"
    assert system_bus_path({"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/x/bus"}) == "/x/bus"
    assert system_bus_path({"DBUS_SYSTEM_BUS_ADDRESS": "tcp:host=h;unix:abstract=b"}) == "\0b"


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[FakeSystemdBus]:
    fake = FakeSystemdBus(tmp_path / "bus").start()
    yield fake
    fake.close()


def requests(count: int) -> list[UnitCpuset]:
    return [UnitCpuset(f"cri-containerd-{n}.scope", CPUSet.parse("1-3")) for n in range(count)]


def test_a_connection_says_which_systemd_answers(peer: FakeSystemdBus) -> None:
    bus = SystemdBus(str(peer.path))
    assert bus.connect() == "252.39-1~deb12u2"
    assert bus.connected
    assert peer.hellos == 1


def test_a_systemd_older_than_244_is_refused_as_too_old(tmp_path: Path) -> None:
    fake = FakeSystemdBus(tmp_path / "bus", version="243").start()
    try:
        with pytest.raises(BusError) as refused:
            SystemdBus(str(fake.path)).connect()
        assert refused.value.reason == "old-systemd"
    finally:
        fake.close()


def test_no_bus_socket_is_no_bus(tmp_path: Path) -> None:
    with pytest.raises(BusError) as refused:
        SystemdBus(str(tmp_path / "none"), timeout=0.2, private=str(tmp_path / "p")).connect()
    assert refused.value.reason == "no-bus"


def test_a_systemd_that_does_not_answer_in_time_is_busy_not_gone(tmp_path: Path) -> None:
    """The VM lab's systemd shape: PID 1 in a daemon-reload, the bus answering Hello and
    systemd not its version; this was ``no-bus`` and a 60 s pause."""
    fake = FakeSystemdBus(tmp_path / "bus", reloading=True).start()
    try:
        bus = SystemdBus(str(fake.path), timeout=HANG_GUARD, private=None)
        started = time.monotonic()
        with pytest.raises(BusError) as busy:
            bus.connect(0.3)  # the caller's bound, not the client's default
        assert busy.value.reason == "busy"
        assert 0.3 <= time.monotonic() - started < HANG_GUARD
        assert not bus.connected
    finally:
        fake.close()


def stalled_socket(path: Path) -> socket.socket:
    """A socket the kernel accepts connections on and nobody answers: systemd's private
    socket during a reload (PID 1 authenticates its clients itself)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)  # never accepted
    return listener


def test_a_socket_nobody_authenticates_on_in_time_is_busy(tmp_path: Path) -> None:
    listener = stalled_socket(tmp_path / "private")
    try:
        with pytest.raises(BusError) as busy:
            SystemdBus(str(tmp_path / "none"), private=str(tmp_path / "private")).connect(0.2)
        assert busy.value.reason == "busy"
        assert "within 0.2 s" in busy.value.detail
    finally:
        listener.close()


def test_a_busy_bus_is_not_left_for_systemds_private_socket(tmp_path: Path) -> None:
    """Busy is somebody there: trying the other socket would cost the step a second wait."""
    listener = stalled_socket(tmp_path / "bus")
    private = FakeSystemdBus(tmp_path / "private").start()
    try:
        with pytest.raises(BusError) as busy:
            SystemdBus(str(tmp_path / "bus"), private=str(private.path)).connect(0.2)
        assert busy.value.reason == "busy"
        assert private.sessions == 0
    finally:
        listener.close()
        private.close()


def test_without_a_system_bus_systemds_private_socket_is_used_without_hello(
        tmp_path: Path) -> None:
    private = FakeSystemdBus(tmp_path / "private").start()
    try:
        bus = SystemdBus(str(tmp_path / "none"), private=str(private.path))
        assert bus.connect() == "252.39-1~deb12u2"
        assert bus.via == str(private.path)
        assert private.hellos == 0  # a direct connection has no bus daemon to greet
        assert bus.set_cpusets(requests(2), wait=5) == {}
        assert not bus.connected  # nothing owed: closed, so systemd's signals do not pile up
    finally:
        private.close()


def test_a_call_after_the_idle_private_connection_was_closed_connects_again(
        tmp_path: Path) -> None:
    """The VM lab's systemd shape found this: the second call on systemd's private socket,
    the first having closed the idle connection, failed an assertion instead of connecting."""
    private = FakeSystemdBus(tmp_path / "private").start()
    try:
        bus = SystemdBus(str(tmp_path / "none"), private=str(private.path))
        bus.connect()
        for _ in range(3):
            assert bus.set_cpusets(requests(2), wait=5) == {}
            assert not bus.connected
        assert len(private.calls) == 6
    finally:
        private.close()


def test_a_first_call_systemd_holds_unread_on_its_private_socket_is_woken_by_a_ping(
        tmp_path: Path) -> None:
    """The VM lab's systemd 252 left one new private connection in about a hundred
    unanswered for 60 s while PID 1 idled: more bytes wake it, and a Ping asks no reply."""
    private = FakeSystemdBus(tmp_path / "private", held_first=1).start()
    try:
        bus = SystemdBus(str(tmp_path / "none"), private=str(private.path))
        started = time.monotonic()
        assert bus.connect(HANG_GUARD) == "252.39-1~deb12u2"
        assert time.monotonic() - started >= NUDGE_EVERY
        assert bus.nudges >= 1  # more if the peer's thread is slow to wake: no verdict on speed
        assert bus.set_cpusets(requests(2), wait=5) == {}  # no reply to the Ping in the way
        assert len(private.calls) == 2
        # The peer answered the held call before it read the Ping behind it; by the time the
        # later calls are answered it has read it.
        assert private.pings == 1
    finally:
        private.close()


def test_a_connection_answered_at_once_is_not_nudged(tmp_path: Path) -> None:
    private = FakeSystemdBus(tmp_path / "private").start()
    try:
        bus = SystemdBus(str(tmp_path / "none"), private=str(private.path))
        for _ in range(3):
            assert bus.set_cpusets(requests(1), wait=5) == {}
        assert (bus.nudges, private.pings) == (0, 0)
    finally:
        private.close()


def test_the_system_bus_is_never_nudged(tmp_path: Path) -> None:
    """dbus-daemon reads every byte: a Ping there would only be one more message to route."""
    fake = FakeSystemdBus(tmp_path / "bus", reloading=True).start()
    try:
        with pytest.raises(BusError):
            SystemdBus(str(fake.path), private=None).connect(3 * NUDGE_EVERY)
        assert fake.pings == 0
    finally:
        fake.close()


def test_a_client_never_connected_connects_at_its_first_call(peer: FakeSystemdBus) -> None:
    bus = SystemdBus(str(peer.path))
    assert bus.set_cpusets(requests(2), wait=5) == {}
    assert bus.connected
    assert peer.hellos == 1


def test_a_closed_client_whose_bus_is_gone_raises_no_bus(tmp_path: Path) -> None:
    fake = FakeSystemdBus(tmp_path / "bus").start()
    bus = SystemdBus(str(fake.path), timeout=0.2, private=None)
    bus.connect()
    bus.close()
    fake.close()
    with pytest.raises(BusError) as gone:
        bus.set_cpusets(requests(1), wait=1)
    assert gone.value.reason == "no-bus"
    assert not bus.connected


def test_every_call_is_sent_before_the_first_reply_is_awaited(peer: FakeSystemdBus) -> None:
    peer.hold_until = 20  # a client waiting for each reply would never send the 20th
    bus = SystemdBus(str(peer.path))
    bus.connect()
    assert bus.set_cpusets(requests(20), wait=5) == {}
    assert [unit_of(c) for c in peer.calls] == [r.unit for r in requests(20)]


def test_no_more_than_the_window_awaits_a_reply_at_once(peer: FakeSystemdBus) -> None:
    peer.hold_until = 200  # answer only a whole window at once, or the last calls
    bus = SystemdBus(str(peer.path))
    bus.connect()
    assert bus.set_cpusets(requests(200), wait=5) == {}
    assert len(peer.calls) == 200
    assert peer.max_in_flight == WINDOW


def test_a_refused_unit_is_named_with_systemds_error(peer: FakeSystemdBus) -> None:
    peer.answer = lambda call: (("org.freedesktop.systemd1.NoSuchUnit", "Unit x not loaded.")
                                if unit_of(call).startswith("cri-containerd-1.") else None)
    bus = SystemdBus(str(peer.path))
    bus.connect()
    problems = bus.set_cpusets(requests(3), wait=5)
    assert problems == {"cri-containerd-1.scope":
                        "org.freedesktop.systemd1.NoSuchUnit: Unit x not loaded."}


def test_calls_unanswered_in_time_are_timeouts_and_their_late_replies_are_dropped(
        peer: FakeSystemdBus) -> None:
    peer.hold_until = 5  # the first 3 are answered only once 2 more have come
    bus = SystemdBus(str(peer.path))
    bus.connect()
    assert bus.set_cpusets(requests(3), wait=0.2) == {r.unit: "timeout" for r in requests(3)}
    # systemd lags: the next calls are sent and not awaited (they release all five replies,
    # which may or may not have come by the time this call reads what has come).
    late = [UnitCpuset("late.scope", CPUSet.parse("0"))] * 2
    started = time.monotonic()
    assert bus.set_cpusets(late, wait=HANG_GUARD) in ({"late.scope": "timeout"}, {})
    assert time.monotonic() - started < HANG_GUARD  # not awaited
    time.sleep(0.2)
    # The five late replies are read and dropped; this call's own reply is awaited again.
    assert bus.set_cpusets([UnitCpuset("next.scope", CPUSet.parse("1"))], wait=5) == {}


def test_a_silent_systemd_costs_one_wait_then_none_while_the_window_is_full(
        peer: FakeSystemdBus) -> None:
    peer.silent = True
    bus = SystemdBus(str(peer.path))
    bus.connect()
    assert set(bus.set_cpusets(requests(WINDOW), wait=0.2).values()) == {"timeout"}
    started = time.monotonic()
    assert set(bus.set_cpusets(requests(5), wait=HANG_GUARD).values()) == {UNSENT}
    assert time.monotonic() - started < HANG_GUARD  # nothing could be sent: nothing awaited
    assert len(peer.calls) == WINDOW


def test_signals_between_the_replies_are_skipped(peer: FakeSystemdBus) -> None:
    peer.noise = 50  # fifty signals after each call received
    bus = SystemdBus(str(peer.path))
    bus.connect()
    assert bus.set_cpusets(requests(100), wait=5) == {}


def test_a_flood_of_signals_does_not_stretch_the_wait(peer: FakeSystemdBus) -> None:
    """The flood outlasts the hang guard: a wait each signal stretched would end with it."""
    peer.silent, peer.flood = True, HANG_GUARD  # no reply, a flood of signals instead
    bus = SystemdBus(str(peer.path))
    bus.connect()
    started = time.monotonic()
    assert set(bus.set_cpusets(requests(64), wait=0.3).values()) == {"timeout"}
    assert time.monotonic() - started < HANG_GUARD
    bus.close()  # the flood ends with the connection


def test_a_bus_that_goes_away_is_no_bus_and_closed(peer: FakeSystemdBus) -> None:
    bus = SystemdBus(str(peer.path))
    bus.connect()
    peer.drop_connection()

    def three_calls() -> None:  # the first send may still land in the socket's buffer
        for _ in range(3):
            bus.set_cpusets(requests(2), wait=1)

    with pytest.raises(BusError) as gone:
        three_calls()
    assert gone.value.reason == "no-bus"
    assert not bus.connected
