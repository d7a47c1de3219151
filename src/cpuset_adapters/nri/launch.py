"""Who the plugin is and how it reaches the runtime: the name/index rules (fact sheet §1.3), the
two launch modes (an external plugin dials the NRI socket, §1.1; a pre-installed one inherits a
connected socketpair end as ``NRI_PLUGIN_SOCKET=3``, §1.2), and connecting.
"""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from cpuset_adapters import default_paths

DEFAULT_SOCKET_PATH = default_paths.NRI_SOCKET

_NAME = re.compile(r"[a-zA-Z0-9_.+-]+")
_INDEX = re.compile(r"[0-9][0-9]")


class InvalidPluginIdentityError(ValueError):
    """The plugin name or index would be refused by the runtime (§1.3)."""


def validate_identity(name: str, index: str) -> None:
    """Raise :class:`InvalidPluginIdentityError` unless ``index`` is exactly two ASCII digits
    and ``name`` matches ``[a-zA-Z0-9_.+-]+`` (NRI v0.12's rules; v0.6.1 only wants a name)."""
    if not _INDEX.fullmatch(index):
        raise InvalidPluginIdentityError(
            f"plugin index {index!r} must be exactly two digits (00-99)")
    if not _NAME.fullmatch(name):
        raise InvalidPluginIdentityError(
            f"plugin name {name!r} must be non-empty and use only [a-zA-Z0-9_.+-]")


@dataclass(frozen=True, slots=True)
class SocketPath:
    """An external plugin: dial the runtime's NRI socket, and reconnect when it goes away."""

    path: str = DEFAULT_SOCKET_PATH


@dataclass(frozen=True, slots=True)
class InheritedSocket:
    """A pre-installed plugin: the runtime's socketpair end, already connected. The runtime
    never restarts such a plugin, so its session ends with this connection."""

    fd: int = 3


Endpoint = SocketPath | InheritedSocket


@dataclass(frozen=True, slots=True)
class Launch:
    """Who we are and where the runtime is, as this process was started."""

    name: str
    index: str
    endpoint: Endpoint


def launch_from_environ(environ: Mapping[str, str], *, name: str, index: str,
                        socket_path: str = DEFAULT_SOCKET_PATH) -> Launch:
    """The launch mode: with ``NRI_PLUGIN_SOCKET`` set the runtime started us, and
    ``NRI_PLUGIN_NAME`` / ``NRI_PLUGIN_IDX`` (when set) replace ``name`` / ``index``; otherwise
    dial ``socket_path``. Raises ``ValueError`` (:class:`InvalidPluginIdentityError` for a bad
    name or index)."""
    fd_text = environ.get("NRI_PLUGIN_SOCKET", "")
    if fd_text:
        fd = int(fd_text, 10) if fd_text.isascii() and fd_text.isdigit() else -1
        if fd < 0:
            raise ValueError(f"NRI_PLUGIN_SOCKET={fd_text!r} is not a file descriptor number")
        launch = Launch(environ.get("NRI_PLUGIN_NAME") or name,
                        environ.get("NRI_PLUGIN_IDX") or index, InheritedSocket(fd))
    else:
        launch = Launch(name, index, SocketPath(socket_path))
    validate_identity(launch.name, launch.index)
    return launch


async def connect(endpoint: Endpoint) -> socket.socket:
    """A connected, non-blocking unix stream socket to the runtime; raises ``OSError``."""
    if isinstance(endpoint, InheritedSocket):
        sock = socket.socket(fileno=endpoint.fd)
        if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
            sock.detach()  # leave the fd alone: it is not the runtime's socketpair end
            raise OSError(f"fd {endpoint.fd} is not a unix stream socket")
        sock.settimeout(0.0)  # non-blocking, as asyncio needs
        return sock
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(0.0)
    try:
        await asyncio.get_running_loop().sock_connect(sock, endpoint.path)
    except BaseException:
        sock.close()
        raise
    return sock
