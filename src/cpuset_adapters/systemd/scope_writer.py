"""The kernel fast path on systemd-driver nodes: a scope's unit properties with its files.

With runc's systemd cgroup driver each container is a ``cri-containerd-<id>.scope`` whose
``AllowedCPUs``/``AllowedMemoryNodes`` systemd writes back into its cgroup on every
``daemon-reload``. Cgroup files written behind systemd's back are reverted then, so for a
container whose cgroup is a scope (known from its cgroup path, on cgroup v2, where systemd
owns the cpuset controller) this :class:`~cpuset_core.ports.ContainerUpdater` sets the unit's
properties first (runtime properties, over D-Bus, all of a step's units pipelined) and then
writes the files through :class:`~cpuset_adapters.cgroup_writer.KernelCpusetWriter`, as runc
does. What systemd re-applies is then already the new value.

The step's outcome is the files': systemd never fails a creation. No bus, a busy systemd, an
old systemd, a refused call or no reply in time leaves that container to the files alone
(today's behaviour), counted by outcome, with one warning per episode. A bus that failed is
tried again after :data:`RETRY_AFTER` seconds; a busy one (connected, not answering: systemd
in a ``daemon-reload``) after the runtime's request timeout (one hook waits for it once), since
every reload reverts the scopes it was not told about; an old systemd is not asked again.
What a step could not send (no bus, busy, the connection lost) is sent with the next step
that reaches systemd, so a unit never keeps a value older than its files for longer than
systemd stays unreachable. Decision 37.

One container's files the kernel refuses to the plugin in a pod: its own, on cgroup v2 mounted
with ``nsdelegate`` (as systemd mounts it), where a container's cgroup is its cgroup
namespace's root. systemd, outside, writes them when it sets the unit; once read back holding
the value they count as written, so the fast path does not stop at every step that changes the
shared pool (found running the DaemonSet's pod on the VM lab's systemd shape, issue 33).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from cpuset_adapters.cgroup_writer import KernelCpusetWriter, PathOf, refusals
from cpuset_adapters.cgroupfs import systemd_unit
from cpuset_adapters.systemd.bus import UNSENT, BusError
from cpuset_adapters.systemd.call import UnitCpuset
from cpuset_core import ContainerUpdate
from cpuset_core.ports import UpdateOutcome

_log = logging.getLogger("nri_cpuset.kernel")

REPLY_WAIT = 0.5
"""Seconds a step waits for systemd's replies: a quarter of NRI's default request timeout
(the runtime's own timeout sets it at Configure: :meth:`SystemdScopeWriter.budget`)."""
RETRY_AFTER = 60.0
"""Seconds before a bus that failed, or refused for want of permission, is tried again."""

READBACK_TRIES = 5
READBACK_PAUSE = 0.002
"""How often, and how far apart in seconds, a file the kernel refused to the plugin is read
back for the value systemd writes once it has set the unit (:meth:`SystemdScopeWriter.apply`):
at most 8 ms in a step, and only for such a container."""

BUSY_PAUSE_STEPS = 4
"""After systemd was busy, the bus is left alone for this many step waits (the runtime's request
timeout): one hook pays the wait once."""

OUTCOMES = ("set", "gone", "refused", "timeout", "busy", "no-bus", "old-systemd")
"""What became of a container's unit write: set; its unit gone (with the container); refused
by systemd; not answered in time (sent: systemd applies it when it gets to it); not sent,
systemd connected and not answering in time (busy, e.g. in a daemon-reload: sent again with
the next step); not sent, no bus (sent again with the first step after the pause); a systemd
without the properties (before 244)."""
Count = Callable[[str, int], None]
"""An outcome of :data:`OUTCOMES` and how many containers had it."""

_PAUSING = ("org.freedesktop.DBus.Error.AccessDenied",
            "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired")
"""Errors every later call would get too: the bus is left alone for a while."""


class ScopeBus(Protocol):
    """What the writer needs of the bus (``systemd.bus.SystemdBus``; fakes in tests)."""

    version: str

    @property
    def connected(self) -> bool: ...

    def connect(self, wait: float) -> str: ...

    def set_cpusets(self, requests: Sequence[UnitCpuset], wait: float) -> dict[str, str]: ...

    def close(self) -> None: ...


def _no_count(outcome: str, containers: int) -> None:
    """Nothing counts (tests, tools)."""


def outcome_of(problem: str) -> str:
    """The outcome a D-Bus problem counts as."""
    if problem == "timeout":
        return "timeout"
    if problem == UNSENT:
        return "busy"  # systemd has not answered a window of calls: this one waits here
    name = problem.partition(":")[0]
    if name in ("org.freedesktop.systemd1.NoSuchUnit", "org.freedesktop.DBus.Error.UnknownObject"):
        return "gone"  # the container is going away: its files are gone too
    if name == "org.freedesktop.DBus.Error.PropertyReadOnly":
        return "old-systemd"  # "Cannot set property AllowedCPUs, or unknown property."
    return "refused"


class SystemdScopeWriter:
    """Writes containers' cpusets into systemd's units (scopes) and their cgroup files."""

    def __init__(self, files: KernelCpusetWriter, path_of: PathOf, bus: ScopeBus, *,
                 count: Count = _no_count, wait: float = REPLY_WAIT,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.files = files
        self._path_of = path_of
        self._bus = bus
        self._count = count
        self.wait = wait
        self._clock = clock
        self._sleep = sleep
        self._told_written_by_systemd = False
        self.enabled = True
        """``runtime.systemd_units``: off, only the files are written (today's path)."""
        self._failing = ""
        """The outcome of the failure episode under way (``""``: none), warned about once."""
        self._retry_at = 0.0
        self._never = ""
        """Why the bus is not asked again (an old systemd)."""
        self._announced = False
        self._pending: dict[str, UnitCpuset] = {}
        """Units whose latest value never reached systemd (no bus, busy, the connection lost
        mid-call, past a full window), sent with the next call that goes out. That call
        leaves only what it could not send itself: every other unit had an answer (set,
        gone, refused) or is queued in systemd (timeout, applied in order). So it holds only
        units written since systemd last took a call, not units long gone."""

    def switch(self, enabled: bool) -> None:
        """``runtime.systemd_units`` reloaded: takes effect at the next update."""
        self.enabled = enabled
        if not enabled:
            self._bus.close()
            # Files written while off are newer than what is pending: sending it later
            # would put the units behind their files.
            self._pending.clear()
        _log.info("systemd scopes' AllowedCPUs/AllowedMemoryNodes: %s",
                  "set over D-Bus with the files" if enabled
                  else "left to the runtime (runtime.systemd_units = false)")

    def budget(self, request_timeout: float) -> None:
        """The runtime's request timeout (Configure): a step waits a quarter of it."""
        if request_timeout > 0:
            self.wait = request_timeout / 4

    def apply(self, updates: Sequence[ContainerUpdate]) -> UpdateOutcome:
        """Set the scopes' unit properties, then write every update's files; the outcome is
        the files' (see :meth:`KernelCpusetWriter.apply`), except that a file refused to the
        plugin which systemd, having set the unit, wrote itself counts as written."""
        set_units: set[str] = set()
        if self.enabled and self.files.version == 2:
            requests = self.requests(updates)
            if requests:
                set_units = self._tell_systemd(requests)
        refused = self.files.refused(updates)
        if refused and set_units:
            refused = [(update, why) for update, why in refused
                       if not (self._unit_of(update) in set_units and self._written_by_systemd(
                           update, why))]
        return refusals(refused)

    def _unit_of(self, update: ContainerUpdate) -> str | None:
        path = self._path_of(update.container_id)
        return systemd_unit(path) if path else None

    def _written_by_systemd(self, update: ContainerUpdate, why: str) -> bool:
        """Whether systemd wrote the files the kernel refused to the plugin. The plugin's own
        container is one: on cgroup v2 mounted with ``nsdelegate`` (systemd mounts it so) a
        container's cgroup is its cgroup namespace's root, whose files the kernel keeps from
        the processes inside, and runtimes give every container a cgroup namespace of its
        own. systemd realizes a unit's new properties just after its reply, so the files are
        read back a few times, briefly."""
        for attempt in range(READBACK_TRIES):
            if self.files.holds(update):
                if not self._told_written_by_systemd:
                    self._told_written_by_systemd = True
                    _log.info("a cgroup the kernel keeps from the plugin (its own container's, "
                              "as a cgroup namespace's root) is written by systemd from the "
                              "unit set over D-Bus", extra={"subject": update.subject,
                                                            "error": why})
                return True
            if attempt < READBACK_TRIES - 1:
                self._sleep(READBACK_PAUSE)
        return False

    def requests(self, updates: Sequence[ContainerUpdate]) -> list[UnitCpuset]:
        """What to set on the units of the updates' containers that are systemd scopes."""
        requests = []
        for update in updates:
            unit = self._unit_of(update)
            if unit is None or not update.cpus:
                continue
            requests.append(UnitCpuset(unit, update.cpus, update.mems))
        return requests

    def _tell_systemd(self, requests: list[UnitCpuset]) -> set[str]:
        """Send ``requests`` (and what earlier steps could not); the units systemd set."""
        unavailable = self._unavailable()
        if unavailable:
            self._count(unavailable, len(requests))
            self._hold(requests, unavailable)
            return set()
        # The step's own first (a full window leaves the last ones unsent), then what earlier
        # steps could not send, unless the step has a newer value for that unit.
        own = {request.unit for request in requests}
        resent = [request for unit, request in self._pending.items() if unit not in own]
        try:
            problems = self._bus.set_cpusets([*requests, *resent], self.wait)
        except BusError as exc:
            self._pause(exc.reason)
            self._hold(requests, exc.reason)
            self._fail(exc.reason, exc.detail, len(requests))
            return set()
        # Everything went out (answered, or queued in systemd) but what the window left.
        self._pending = {request.unit: request for request in [*requests, *resent]
                         if problems.get(request.unit) == UNSENT}
        self._settle(problems, len(requests) + len(resent), len(resent))
        return {request.unit for request in requests if request.unit not in problems}

    def _pause(self, reason: str) -> None:
        """Leave the bus alone for a while after a failure: a minute when there is no bus; when
        systemd is only busy, the runtime's request timeout (four step waits), so one hook of
        several steps waits for a busy systemd once, not at every step, and the next hook (or
        the verifier's repair) asks again."""
        pause = BUSY_PAUSE_STEPS * self.wait if reason == "busy" else RETRY_AFTER
        self._retry_at = self._clock() + pause

    def _hold(self, requests: list[UnitCpuset], reason: str) -> None:
        """Keep the step's unsent values for the next call (none for a systemd that is never
        asked again)."""
        if reason == "old-systemd":
            self._pending.clear()
            return
        for request in requests:
            self._pending[request.unit] = request

    def _unavailable(self) -> str:
        """Why the bus cannot be asked now (``""``: it can), connecting first if needed."""
        if self._never:
            return self._never
        if self._bus.connected:
            return ""
        if self._clock() < self._retry_at:
            return self._failing or "no-bus"
        try:
            version = self._bus.connect(self.wait)  # no longer than the step would wait
        except BusError as exc:
            if exc.reason == "old-systemd":
                self._never = exc.reason
            self._pause(exc.reason)
            self._fail(exc.reason, exc.detail, 0)
            return exc.reason
        if not self._announced:  # a private-socket connection is made again at each use
            self._announced = True
            _log.info("systemd scopes' AllowedCPUs/AllowedMemoryNodes set over D-Bus with the "
                      "files", extra={"systemd": version})
        return ""

    def _settle(self, problems: dict[str, str], asked: int, resent: int) -> None:
        """Count and report a call's answers: ``asked`` units, ``resent`` of them held from
        earlier steps (counted when they failed to go, and now by their answer)."""
        by_outcome: dict[str, list[tuple[str, str]]] = {}
        for unit, problem in problems.items():
            by_outcome.setdefault(outcome_of(problem), []).append((unit, problem))
        self._count("set", asked - len(problems))
        for outcome, refused in by_outcome.items():
            if outcome == "gone":
                self._count(outcome, len(refused))
                continue
            if outcome == "old-systemd":
                self._never = outcome
                self._bus.close()
            elif any(problem.startswith(_PAUSING) for _, problem in refused):
                self._retry_at = self._clock() + RETRY_AFTER
                self._bus.close()
            detail = "; ".join(f"{unit}: {problem}" for unit, problem in refused[:3])
            self._fail(outcome, detail, len(refused))
        if not by_outcome.keys() - {"gone"} and self._failing:
            _log.info("systemd scopes' AllowedCPUs/AllowedMemoryNodes set again",
                      extra={"after": self._failing, "resent": resent})
            self._failing = ""

    def _fail(self, outcome: str, detail: str, containers: int) -> None:
        if containers:
            self._count(outcome, containers)
        if outcome != self._failing and outcome == "timeout":
            _log.warning("systemd has not answered the scopes' unit writes in time; it applies "
                         "them when it gets to them, in order (the files are written)",
                         extra={"outcome": outcome, "wait_s": self.wait, "error": detail})
        elif outcome != self._failing and outcome == "busy":
            _log.warning("systemd did not answer in time (busy, e.g. in a daemon-reload): the "
                         "scopes' files only for now; their units are set at the next update",
                         extra={"outcome": outcome, "wait_s": self.wait, "error": detail})
        elif outcome != self._failing:
            _log.warning("systemd scopes not updated over D-Bus; their cgroup files only "
                         "(a daemon-reload may revert them until the verifier repairs them)",
                         extra={"outcome": outcome, "error": detail})
        self._failing = outcome
