"""Telling systemd the plugin is ready: READY=1 once, after the first Synchronize's reply, with
a STATUS line each time; nothing at all outside a notify unit."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters.nri.handler import CpusetNriHandler
from cpuset_adapters.systemd_notify import SystemdNotifier
from cpuset_cli.daemon.ready_notice import ReadyNotice, synchronized_status
from cpuset_core import CpusetEngine
from cpuset_service.placement import PlacementService
from tests.builders.nri import container, pod
from tests.builders.systemd import notify_manager
from tests.unit.nri.handler_harness import TOPOLOGY


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    with notify_manager(tmp_path, timeout=0.0) as bound:
        yield bound


def received(sock: socket.socket) -> list[bytes]:
    out = []
    while True:
        try:
            out.append(sock.recv(4096))
        except BlockingIOError:
            return out


def test_ready_is_sent_once_after_the_synchronize_reply_then_only_status(
        manager: tuple[str, socket.socket]) -> None:
    path, sock = manager
    service = PlacementService(CpusetEngine(TOPOLOGY))
    notice = ReadyNotice(SystemdNotifier({"NOTIFY_SOCKET": path}),
                         lambda: synchronized_status(None, len(service.engine.ledger.entries)))
    handler = CpusetNriHandler(service, on_synchronized=notice.synchronized)
    web = pod("web", qos="burstable")

    async def two_synchronizes() -> list[list[bytes]]:
        seen = []
        handler.on_synchronize([web], [container("app", web, cpuset="0-15")])
        seen.append(received(sock))  # the reply is being made: nothing yet
        await asyncio.sleep(0)
        seen.append(received(sock))
        handler.on_synchronize([web], [container("app", web, cpuset="0-15")])
        await asyncio.sleep(0)
        seen.append(received(sock))
        return seen

    before, first, second = asyncio.run(two_synchronizes())
    assert before == []
    assert first == [b"STATUS=synchronized with the runtime: 1 containers placed\nREADY=1"]
    assert second == [b"STATUS=synchronized with the runtime: 1 containers placed"]
    assert notice.ready


def test_outside_a_notify_unit_a_synchronize_schedules_nothing() -> None:
    notice = ReadyNotice(SystemdNotifier({}), lambda: pytest.fail("described for nobody"))

    async def synchronize() -> None:
        notice.synchronized()
        await asyncio.sleep(0)

    asyncio.run(synchronize())
    assert not notice.ready


def test_stopping_is_announced(manager: tuple[str, socket.socket]) -> None:
    path, sock = manager
    ReadyNotice(SystemdNotifier({"NOTIFY_SOCKET": path}), lambda: "").stopping()
    assert received(sock) == [b"STOPPING=1\nSTATUS=stopping on signal"]
