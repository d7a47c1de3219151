"""Waiting to reconnect to the runtime: a backoff that ends early when the runtime is back."""

from __future__ import annotations

import asyncio
import os

from cpuset_adapters.nri.launch import Endpoint, SocketPath

SOCKET_POLL = 0.1
"""Seconds between looks at the runtime's socket while a reconnection waits."""


async def wait_for_socket_or(delay: float, endpoint: Endpoint) -> None:
    """Sleep ``delay`` seconds, or less: until the runtime's socket is created anew. The
    backoff spares a runtime that is down, but a containerd restarting a dense node may take
    10 s, by when the backoff has grown to seconds; the socket's new inode says it is back."""
    if not isinstance(endpoint, SocketPath):
        await asyncio.sleep(delay)
        return
    before = _identity(endpoint.path)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + delay
    while (left := deadline - loop.time()) > 0:
        await asyncio.sleep(min(SOCKET_POLL, left))
        now = _identity(endpoint.path)
        if now is not None and now != before:
            return


def _identity(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_ctime_ns
