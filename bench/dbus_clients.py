"""D-Bus clients from PyPI for the plugin's systemd unit writes (decision 37), measured alike.

For the plugin's own client (``plugin``: jeepney with the call marshalled by
``cpuset_adapters.systemd.call``) and each of jeepney, dbus-fast, sdbus and pystemd used as
their documents show (those installed; pystemd builds only with libsystemd-dev and a
compiler, it has no wheel) this prints:
- resident memory (VmRSS) of a fresh interpreter that imports the daemon's modules, then after
  importing the client, connecting and one call (median of ``--rss-runs`` processes);
- the time of one call (median of ``--calls``), and of ``--batch`` calls pipelined (every
  request sent before the first reply is read) where the client can.

The call is the plugin's own message: ``SetUnitProperties("cri-containerd-<id>.scope", true,
[AllowedCPUs, AllowedMemoryNodes])`` to ``org.freedesktop.systemd1``. Without ``--bus`` a
private ``dbus-daemon`` is started, where nobody owns that name: the daemon answers each call
with ``ServiceUnknown``, so the figures are the client's work and one bus hop each way, not
systemd's (which the VM lab's systemd shape measures). Pipelining stays under dbus-daemon's
``max_replies_per_connection`` (128) by sending 64 at a time, as the plugin does.

Run: ``python bench/dbus_clients.py [--calls 300] [--batch 200] [--rss-runs 5]`` (root).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rss_probe import DAEMON_IMPORTED

DEST = "org.freedesktop.systemd1"
PATH = "/org/freedesktop/systemd1"
IFACE = "org.freedesktop.systemd1.Manager"
UNIT = "cri-containerd-" + "ab" * 32 + ".scope"
CPUS = bytes([0b11111110, 0xFF, 0xFF, 0x0F])  # 1-27
MEMS = bytes([0b01])
WINDOW = 64

# The system bus's limits where they matter here (dbus-daemon's built-in defaults), a policy
# that lets root call anything, and no service directory: nothing is activated for systemd's
# name, which nobody owns here.
_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path={socket}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/>
<allow eavesdrop="true"/><allow own="*"/></policy>
<limit name="max_replies_per_connection">128</limit></busconfig>
"""

# One client in a fresh interpreter: its RSS cost on top of the daemon's modules.
_RSS_PROBE = DAEMON_IMPORTED + """sys.path.insert(0, sys.argv[2])
import dbus_clients
dbus_clients.CLIENTS[sys.argv[1]]()(1)
print(before, rss())
"""


def _jeepney() -> Callable[[int], None]:
    from jeepney import DBusAddress, new_method_call  # noqa: PLC0415
    from jeepney.io.blocking import open_dbus_connection  # noqa: PLC0415

    conn = open_dbus_connection(bus="SYSTEM")
    target = DBusAddress(PATH, bus_name=DEST, interface=IFACE)
    props = [("AllowedCPUs", ("ay", CPUS)), ("AllowedMemoryNodes", ("ay", MEMS))]

    def calls(n: int) -> None:
        left = n
        while left:
            window = min(left, WINDOW)
            for _ in range(window):
                conn.send(new_method_call(target, "SetUnitProperties", "sba(sv)",
                                          (UNIT, True, props)))
            for _ in range(window):
                conn.receive(timeout=5)
            left -= window
    return calls


def _dbus_fast() -> Callable[[int], None]:
    from dbus_fast import BusType, Message, Variant  # noqa: PLC0415
    from dbus_fast.aio import MessageBus  # noqa: PLC0415

    loop = asyncio.new_event_loop()

    async def connect() -> Any:
        return await MessageBus(bus_type=BusType.SYSTEM).connect()

    bus = loop.run_until_complete(connect())
    body = [UNIT, True, [["AllowedCPUs", Variant("ay", CPUS)],
                         ["AllowedMemoryNodes", Variant("ay", MEMS)]]]

    async def window(n: int) -> None:
        await asyncio.gather(*(bus.call(Message(
            destination=DEST, path=PATH, interface=IFACE, member="SetUnitProperties",
            signature="sba(sv)", body=body)) for _ in range(n)))

    def calls(n: int) -> None:
        left = n
        while left:
            loop.run_until_complete(window(min(left, WINDOW)))
            left -= min(left, WINDOW)
    return calls


def _sdbus() -> Callable[[int], None]:
    import sdbus  # noqa: PLC0415

    bus = sdbus.sd_bus_open_system()

    def calls(n: int) -> None:  # blocking calls only: one at a time
        for _ in range(n):
            message = bus.new_method_call_message(DEST, PATH, IFACE, "SetUnitProperties")
            message.append_data("sba(sv)", UNIT, True,  # noqa: FBT003 - the call's runtime flag
                                [("AllowedCPUs", ("ay", CPUS)),
                                 ("AllowedMemoryNodes", ("ay", MEMS))])
            with contextlib.suppress(sdbus.SdBusBaseError):
                bus.call(message)
    return calls


def _pystemd() -> Callable[[int], None]:
    from pystemd.dbuslib import DBus, apply_signature  # noqa: PLC0415
    from pystemd.exceptions import PystemdRunError  # noqa: F401, PLC0415

    bus = DBus()
    bus.open()
    # pystemd's own property table has no AllowedCPUs: the arguments are typed by hand
    # (AllowedCPUs only: a few bytes less than the others send).
    args = apply_signature(b"sb", [UNIT.encode(), True])
    args += [(ord("a"), b"(sv)"), (ord("r"), b"sv"), (ord("s"), b"AllowedCPUs"),
             (ord("v"), b"ay"), (ord("a"), b"y"), *[(ord("y"), b) for b in CPUS],
             (-1, None), (-1, None), (-1, None), (-1, None)]

    def calls(n: int) -> None:  # blocking calls only
        for _ in range(n):
            # ServiceUnknown is the expected answer.
            with contextlib.suppress(Exception):
                bus.call_method(DEST.encode(), PATH.encode(), IFACE.encode(),
                                b"SetUnitProperties", args)
    return calls


def _plugin() -> Callable[[int], None]:
    """The plugin's own client (jeepney for authentication and replies, the call marshalled
    by ``cpuset_adapters.systemd.call``). Its ``connect`` asks systemd's version, which nobody
    answers here: the connection is opened as ``connect`` opens it, without that question."""
    from jeepney.bus_messages import message_bus  # noqa: PLC0415

    from cpuset_adapters.systemd.bus import SystemdBus  # noqa: PLC0415
    from cpuset_adapters.systemd.call import UnitCpuset  # noqa: PLC0415
    from cpuset_adapters.systemd.connection import Bound  # noqa: PLC0415
    from cpuset_core.cpuset import CPUSet  # noqa: PLC0415

    bus = SystemdBus(private=None)
    bound = Bound.starting_now(bus.timeout)
    bus._open(bus.path, bound)
    bus._call(message_bus.Hello(), bound)
    request = UnitCpuset(UNIT, CPUSet.from_mask(int.from_bytes(CPUS, "little")),
                         CPUSet.from_mask(int.from_bytes(MEMS, "little")))

    def calls(n: int) -> None:
        problems = bus.set_cpusets([request] * n, wait=5)
        assert all("ServiceUnknown" in p for p in problems.values()), problems
    return calls


CLIENTS: dict[str, Callable[[], Callable[[int], None]]] = {
    "plugin": _plugin, "jeepney": _jeepney, "dbus-fast": _dbus_fast, "sdbus": _sdbus,
    "pystemd": _pystemd}
PIPELINES = {"plugin", "jeepney", "dbus-fast"}
MODULES = {"plugin": "jeepney", "jeepney": "jeepney", "dbus-fast": "dbus_fast",
           "sdbus": "sdbus", "pystemd": "pystemd"}


def _rss(name: str) -> tuple[int, int]:
    here = str(Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE, name, here],  # noqa: S603
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    return int(out[0]), int(out[1])


def _median_call(calls: Callable[[int], None], count: int) -> float:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        calls(1)
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def _batch(calls: Callable[[int], None], size: int, repeats: int = 5) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        calls(size)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _start_bus(directory: Path) -> subprocess.Popen[bytes]:
    socket = directory / "bus"
    (directory / "bus.conf").write_text(_CONFIG.format(socket=socket))
    daemon = subprocess.Popen(["dbus-daemon", "--nofork",  # noqa: S603, S607
                               f"--config-file={directory / 'bus.conf'}"])
    deadline = time.monotonic() + 10
    while not socket.exists():
        if time.monotonic() > deadline:
            raise SystemExit("dbus-daemon did not start")
        time.sleep(0.02)
    os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = f"unix:path={socket}"
    return daemon


def _report(name: str, args: Any) -> None:
    runs = [_rss(name) for _ in range(args.rss_runs)]
    before = statistics.median(r[0] for r in runs) / 1024
    after = statistics.median(r[1] for r in runs) / 1024
    calls = CLIENTS[name]()
    calls(10)  # warm
    one = _median_call(calls, args.calls)
    line = (f"{name:10} RSS {before:5.1f} -> {after:5.1f} MiB (+{after - before:.1f}); "
            f"one call {one:6.0f} us; {args.batch} calls ")
    if name in PIPELINES:
        line += f"pipelined {_batch(calls, args.batch):6.1f} ms"
    else:
        line += f"one by one {_batch(calls, args.batch):6.1f} ms (no blocking pipeline)"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--rss-runs", type=int, default=5)
    parser.add_argument("--bus", help="a bus address (default: a private dbus-daemon)")
    args = parser.parse_args()
    present = [n for n in CLIENTS if importlib.util.find_spec(MODULES[n]) is not None]
    with tempfile.TemporaryDirectory() as tmp:
        daemon = None
        if args.bus:
            os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = args.bus
        elif shutil.which("dbus-daemon"):
            daemon = _start_bus(Path(tmp))
        else:
            raise SystemExit("no dbus-daemon: install dbus or pass --bus")
        try:
            print(f"python {sys.version.split()[0]}; clients: {', '.join(present)}")
            for name in present:
                _report(name, args)
        finally:
            if daemon is not None:
                daemon.terminate()
                daemon.wait(timeout=10)


if __name__ == "__main__":
    main()
