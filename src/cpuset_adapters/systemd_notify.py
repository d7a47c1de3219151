"""systemd's readiness protocol (``sd_notify``): one datagram of ``KEY=VALUE`` lines to the
socket named by ``NOTIFY_SOCKET``.

With ``Type=notify`` in the plugin's unit, systemd holds back the units ordered after it (the
kubelet: ``Before=kubelet.service``) until the plugin says ``READY=1``, which it says once it
is registered with the runtime and synchronized. The first pods of a cold boot then pass
through the plugin, instead of being corrected after they started (docs/decisions.md, 32).

Outside a systemd service (``NOTIFY_SOCKET`` unset: a terminal, a DaemonSet, containerd's
pre-installed launch) every call does nothing. The protocol is a few lines; libsystemd is not
worth a dependency for it.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

_log = logging.getLogger("nri_cpuset.systemd")

ENV = "NOTIFY_SOCKET"


def address(environ: Mapping[str, str]) -> str | bytes | None:
    """Where to send, from ``NOTIFY_SOCKET``: a path, an abstract address (``@name``, sent as
    a leading NUL byte), or ``None`` when the variable is unset or names nothing usable."""
    value = environ.get(ENV, "")
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    # systemd also knows vsock:… addresses (for VMs' managers): not ours to serve.
    return None


def message(fields: Mapping[str, str]) -> bytes:
    """The datagram: one ``KEY=VALUE`` per line. A value's newline would start a new key, so
    it is folded into a space; ``ValueError`` for a key systemd could not parse."""
    lines = []
    for key, value in fields.items():
        if not key or "=" in key or "\n" in key:
            raise ValueError(f"sd_notify key {key!r} is not a plain name")
        lines.append(f"{key}={value.replace(chr(10), ' ')}")
    return "\n".join(lines).encode()


class SystemdNotifier:
    """Sends ``sd_notify`` messages to the manager that started this process, if any."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        self.address = address(environ)
        self._named = environ.get(ENV, "")

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def notify(self, **fields: str) -> bool:
        """Send ``fields`` (e.g. ``READY="1"``); whether the manager got them. A failure is
        logged, never raised: readiness is an aid to ordering, not a reason to stop pinning."""
        if self.address is None:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self.address)
                sock.sendall(message(fields))
        except OSError as exc:
            _log.warning("could not tell systemd %s at %s: %s", ",".join(fields),
                         self._named, exc)
            return False
        return True
