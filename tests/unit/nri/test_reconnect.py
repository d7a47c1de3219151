"""Waiting to reconnect: the backoff ends as soon as the runtime's socket is created anew."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from cpuset_adapters.nri.launch import InheritedSocket, SocketPath
from cpuset_adapters.nri.reconnect import wait_for_socket_or


def listen(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    return server


def test_a_socket_created_while_waiting_ends_the_wait(tmp_path: Path) -> None:
    path = tmp_path / "nri.sock"

    async def main() -> None:
        waiting = asyncio.create_task(wait_for_socket_or(600, SocketPath(str(path))))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        with listen(path):  # the runtime is back
            await asyncio.wait_for(waiting, timeout=30)

    asyncio.run(main())


def test_a_runtime_restarted_on_the_same_path_ends_the_wait(tmp_path: Path) -> None:
    path = tmp_path / "nri.sock"
    old = listen(path)

    async def main() -> None:
        waiting = asyncio.create_task(wait_for_socket_or(600, SocketPath(str(path))))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # the socket that failed is still there: keep waiting
        old.close()
        path.unlink()
        with listen(path):
            await asyncio.wait_for(waiting, timeout=30)

    asyncio.run(main())


def test_without_a_new_socket_the_whole_delay_is_waited(tmp_path: Path) -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await wait_for_socket_or(0.3, SocketPath(str(tmp_path / "absent.sock")))
        await wait_for_socket_or(0.1, InheritedSocket())
        return loop.time() - start

    assert asyncio.run(main()) >= 0.4
