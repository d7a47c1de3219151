"""The daemon's local status endpoint: a root-only unix socket that answers one JSON document.

No network listener: the socket's directory is created 0700 and the socket 0600, so only root
(the daemon's user) can read the node's placements. A client connects and reads until EOF; the
server writes a fresh snapshot and closes. Nothing is read from the client, so there is no
request parsing to get wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

from cpuset_adapters import default_paths

DEFAULT_STATUS_SOCKET = default_paths.STATUS_SOCKET
MAX_STATUS_BYTES = 64 * 2**20


async def serve_status(path: str | Path,
                       snapshot: Callable[[], Awaitable[bytes]]) -> asyncio.Server:
    """Listen on ``path`` (replacing a stale socket) and answer every connection with
    ``await snapshot()``. Raises ``OSError`` when the socket cannot be created safely: its directory
    must belong to this user and be writable by nobody else, and the path must not be a
    symlink."""
    target = Path(path)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory = target.parent.stat()
    if directory.st_uid != os.geteuid() or directory.st_mode & 0o022:
        raise OSError(f"{target.parent} must belong to uid {os.geteuid()} and be writable by "
                      f"nobody else (mode {directory.st_mode & 0o777:o})")
    if target.is_symlink():
        raise OSError(f"{target} is a symlink; refusing to serve the status there")
    with contextlib.suppress(FileNotFoundError):
        if target.is_socket():
            target.unlink()

    async def answer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(await snapshot())
            await writer.drain()
        except (ConnectionError, OSError):
            pass  # the client went away: nothing to do
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(target))
        # Connecting needs write permission on the socket: 0600 leaves only us. (Until this
        # chmod the default mode already denies others write, and the directory is ours.)
        os.chmod(target, 0o600)
        return await asyncio.start_unix_server(answer, sock=sock)
    except BaseException:
        sock.close()
        raise


def read_status(path: str | Path, *, timeout: float = 5.0) -> bytes:
    """Return the daemon's status document. Raises ``OSError`` (e.g. ``FileNotFoundError``,
    ``PermissionError``, ``ConnectionRefusedError``) when the daemon cannot be reached."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        chunks: list[bytes] = []
        size = 0
        while chunk := sock.recv(65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_STATUS_BYTES:
                raise OSError(f"status from {path} exceeds {MAX_STATUS_BYTES} bytes")
        return b"".join(chunks)
