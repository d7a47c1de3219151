"""When the plugin tells systemd it is ready: at its first Synchronize, once the reply is on
its way, so that a kubelet ordered after the plugin's ``Type=notify`` unit creates its first
pods through a registered, synchronized plugin (docs/decisions.md, 32)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from cpuset_adapters.nri.handler_port import RuntimeInfo
from cpuset_adapters.systemd_notify import SystemdNotifier

_log = logging.getLogger("nri_cpuset.daemon")


class ReadyNotice:
    """``READY=1`` once, a ``STATUS=`` line at every Synchronize, ``STOPPING=1`` at the end."""

    def __init__(self, notifier: SystemdNotifier, describe: Callable[[], str]) -> None:
        self._notifier = notifier
        self._describe = describe
        self.ready = False

    def synchronized(self) -> None:
        """Called on the event loop while the Synchronize reply is being made: the notice is
        sent on the loop's next turn, after the reply is written."""
        if self._notifier.enabled:
            asyncio.get_running_loop().call_soon(self._send)

    def _send(self) -> None:
        fields = {"STATUS": self._describe()}
        if not self.ready:
            fields["READY"] = "1"
        if self._notifier.notify(**fields) and not self.ready:
            _log.info("told systemd the plugin is ready (%s)", fields["STATUS"])
        self.ready = True

    def stopping(self) -> None:
        self._notifier.notify(STOPPING="1", STATUS="stopping on signal")


def synchronized_status(runtime: RuntimeInfo | None, containers: int) -> str:
    """The ``STATUS=`` line ``systemctl status`` shows after a Synchronize."""
    name = f"{runtime.runtime_name} {runtime.runtime_version}" if runtime else "the runtime"
    return f"synchronized with {name}: {containers} containers placed"
