"""``host:port`` listen addresses: one parser for the configuration check and the server that
binds them, so that every address the check accepts is one the server can serve."""

from __future__ import annotations

import ipaddress
import re
from typing import Final

_HOSTNAME: Final = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")


def parse_listen(text: str, *, any_port: bool = False) -> tuple[str, int]:
    """Return ``(host, port)`` from ``host:port`` (``[v6]:port``; an empty host means every
    interface). Port 0 (the kernel picks one) only with ``any_port``. Raises ``ValueError``
    saying what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError("expected host:port, e.g. 127.0.0.1:9477 (\"\" disables)")
    lowest = 0 if any_port else 1
    if not port.isascii() or not port.isdigit() or not lowest <= int(port) < 65536:
        raise ValueError(f"port {port!r} is not a number from {lowest} to 65535")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError as exc:
            raise ValueError(f"{host} is not an IPv6 address") from exc
        return host[1:-1], int(port)
    if ":" in host:
        raise ValueError("an IPv6 host must be in brackets, e.g. [::1]:9477")
    if host and not _HOSTNAME.fullmatch(host):
        raise ValueError(f"host {host!r} is not an IP address or host name")
    return host, int(port)
