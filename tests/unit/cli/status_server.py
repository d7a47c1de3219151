"""A status socket served from a thread, for the inspect and explain tests."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from cpuset_adapters.status_socket import serve_status
from cpuset_cli import state_view


def answer(document: bytes) -> Callable[[], Awaitable[bytes]]:
    async def snapshot() -> bytes:
        return document
    return snapshot


@contextlib.contextmanager
def serving(path: Path, view: state_view.StateView) -> Iterator[Path]:
    """The status socket at ``path`` answering ``view``, served from a thread."""
    document = state_view.encode(view)
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def main() -> None:
        server = await serve_status(path, answer(document))
        ready.set()
        async with server:
            await stop.wait()

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True)
    thread.start()
    assert ready.wait(5)
    try:
        yield path
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)
        loop.close()
