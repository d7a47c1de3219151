"""The sd_notify sender against a real unix datagram socket standing in for systemd."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters.systemd_notify import SystemdNotifier, address, message
from tests.builders.systemd import notify_manager


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    with notify_manager(tmp_path, timeout=5) as bound:
        yield bound


def test_ready_and_status_arrive_as_one_datagram_of_lines(
        manager: tuple[str, socket.socket]) -> None:
    path, sock = manager
    notifier = SystemdNotifier({"NOTIFY_SOCKET": path})
    assert notifier.enabled
    assert notifier.notify(READY="1", STATUS="synchronized\nwith containerd")
    assert sock.recv(4096) == b"READY=1\nSTATUS=synchronized with containerd"


def test_an_abstract_address_is_sent_with_a_leading_nul() -> None:
    name = f"nri-cpuset-test-{id(object())}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(5)
        assert SystemdNotifier({"NOTIFY_SOCKET": f"@{name}"}).notify(STOPPING="1")
        assert sock.recv(4096) == b"STOPPING=1"


@pytest.mark.parametrize("environ", [{}, {"NOTIFY_SOCKET": ""},
                                     {"NOTIFY_SOCKET": "vsock:2:1234"}])
def test_without_a_usable_socket_nothing_is_sent(environ: dict[str, str]) -> None:
    notifier = SystemdNotifier(environ)
    assert address(environ) is None
    assert not notifier.enabled
    assert not notifier.notify(READY="1")


def test_a_manager_that_went_away_is_logged_not_raised(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    notifier = SystemdNotifier({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    with caplog.at_level(logging.WARNING, "nri_cpuset.systemd"):
        assert not notifier.notify(READY="1")
    assert "could not tell systemd READY" in caplog.text


@pytest.mark.parametrize("key", ["", "A=B", "A\nB"])
def test_a_key_systemd_could_not_parse_is_refused(key: str) -> None:
    with pytest.raises(ValueError, match="not a plain name"):
        message({key: "1"})
