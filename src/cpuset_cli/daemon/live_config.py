"""The running configuration: its layers, validated reloads, and the file watcher.

Layers, lowest first: built-in defaults, the file (``--config``), the runtime's plugin config
(NRI Configure, pre-installed plugins), the command line's explicit flags. A reload (SIGHUP,
a change of the file, a Configure) builds the whole configuration anew and checks it first: an
invalid one is logged with every problem and the last good configuration stays. A valid one is
swapped in: live keys (``LIVE_KEYS``) apply at once through ``CpusetEngine.reconfigure``;
changed keys that need a restart are logged and keep their running values.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import attrs

from cpuset_adapters.config import (
    LIVE_KEYS,
    Config,
    ConfigError,
    Document,
    build,
    changed_keys,
    merge,
    parse_toml,
    read_document,
    to_settings,
    toml_value,
    value_at,
    with_values_of,
)
from cpuset_core import Settings, Topology
from cpuset_core.quota import ExclusiveQuota

_log = logging.getLogger("nri_cpuset.config")

POLL_INTERVAL = 2.0
"""Seconds between looks at the file (mtime, size, inode): cheap, and no inotify dependency."""

RUNTIME_SOURCE = "the runtime's plugin config"

FileStamp = tuple[int, int, int]

ENGINE_SECTIONS = frozenset({"pinning", "cpus"})
"""Tables that map to the core's settings."""


def stamp(path: Path) -> FileStamp | None:
    """What identifies one version of the file, or ``None`` when it cannot be seen."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class Decisions(Protocol):
    """What the configuration's engine settings apply to (the placement service)."""

    exclusive_quota: ExclusiveQuota
    """Exclusive containers' own CFS quota in the next admissions and resizes
    (``cpus.exclusive_cpu_quota``; not a core setting: the engine never reads it)."""

    def reconfigure(self, settings: Settings) -> None:
        """Apply live settings; raises ``ValueError`` naming restart-only ones."""
        ...

    def replace_engine(self, settings: Settings) -> bool:
        """Decide with ``settings`` from now on if nothing was decided yet; return whether."""
        ...


@attrs.define
class LiveConfig:
    """The configuration a daemon runs with, and where it came from."""

    path: Path
    required: bool
    """Whether the file was named explicitly (``--config``): then it must exist."""
    topology: Topology
    overrides: Document
    """The explicit command-line flags, as a document: they win over every other layer."""
    current: Config
    file_document: Document | None
    """The file's last good document; ``None`` while the (default) file does not exist."""
    runtime_document: Document = attrs.field(factory=dict)
    decisions: Decisions | None = None
    """What decides with the settings (the placement service), attached by the composition
    root: live keys are applied to it, restart-only engine keys too before its first
    decision."""
    kernel_updates: Callable[[bool], None] | None = None
    """Turns the kernel fast path on or off (``runtime.kernel_updates``), when the daemon
    has one."""
    systemd_units: Callable[[bool], None] | None = None
    """Turns systemd scopes' unit writes on or off (``runtime.systemd_units``), when the
    daemon has the fast path."""
    start_grace: Callable[[float], None] | None = None
    """Sets how long containers not seen to start keep their CPUs (``runtime.start_grace``),
    when the daemon watches starts."""
    set_log_level: Callable[[str], None] = attrs.field(default=lambda level: logging.getLogger()
                                                       .setLevel(level.upper()))
    """How a reload applies ``observability.log_level`` (``run`` hands in the SIGUSR1 toggle's,
    so the toggle returns to the reloaded level)."""
    seen: FileStamp | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, required: bool, topology: Topology,
             overrides: Document | None = None) -> LiveConfig:
        """Return the startup configuration. Raises :class:`ConfigError` listing every
        problem (the daemon must not start)."""
        path = Path(path)
        seen = stamp(path)
        document = read_document(path, required=required)
        layers = overrides or {}
        current = _build(path, [document or {}, {}, layers], topology)
        return cls(path=path, required=required, topology=topology, overrides=layers,
                   current=current, file_document=document, seen=seen)

    def attach(self, decisions: Decisions) -> None:
        """Apply the settings of every reload to ``decisions`` from now on."""
        self.decisions = decisions
        decisions.exclusive_quota = ExclusiveQuota(self.current.cpus.exclusive_cpu_quota)

    def describe_source(self) -> str:
        """Where the running configuration came from, for the startup log."""
        if self.file_document is None:
            return f"no configuration file at {self.path}: using the built-in defaults"
        return f"configuration from {self.path}"

    # -- reloads -------------------------------------------------------------------------------

    def reload_file(self, why: str) -> bool:
        """Read the file again and swap it in if valid; return whether it was."""
        self.seen = stamp(self.path)
        try:
            # A file that disappears at reload keeps the last good configuration: the file
            # being replaced must never silently revert to the defaults.
            document = read_document(self.path, required=True)
        except ConfigError as error:
            self._rejected(why, error)
            return False
        return self._adopt(document, self.runtime_document, why)

    def apply_runtime_config(self, text: str) -> bool:
        """Layer the runtime's plugin config (Configure) over the file; return whether it was
        valid. No file I/O: this runs while the runtime waits for the plugin."""
        try:
            document = parse_toml(text, RUNTIME_SOURCE)
        except ConfigError as error:
            self._rejected("configure", error)
            return False
        return self._adopt(self.file_document, document, "configure")

    def _adopt(self, file_document: Document | None, runtime_document: Document,
               why: str) -> bool:
        layers = [file_document or {}, runtime_document, self.overrides]
        try:
            new = _build(self.path, layers, self.topology)
        except ConfigError as error:
            self._rejected(why, error)
            return False
        changed = changed_keys(self.current, new)
        fixed = [key for key in changed if key not in LIVE_KEYS]
        replaced = self._replace_engine_for(fixed, new, why)
        if why == "configure" and "runtime.cri_socket" in fixed:
            # Only read after Configure (the inventory of a pre-installed plugin): applies.
            replaced.append("runtime.cri_socket")
        fixed = [key for key in fixed if key not in replaced]
        if fixed:
            self._report_restart(why, fixed, new)
            new = with_values_of(new, self.current, fixed)
        live = [key for key in changed if key in LIVE_KEYS]
        if live:
            try:
                self._apply_live(new)
            except ValueError as exc:  # the core refused: keep everything as it was
                _log.error("%s: the engine refused the new settings (%s); keeping the last "
                           "good configuration", why, exc)
                return False
        self.file_document, self.runtime_document, self.current = (file_document,
                                                                   runtime_document, new)
        if live:
            _log.info("%s: applied %s", why, _assignments(live, new))
        elif not changed:
            _log.info("%s: configuration unchanged", why)
        return True

    def _report_restart(self, why: str, fixed: list[str], new: Config) -> None:
        if why == "configure":
            # Sockets and the listener are in use before Configure arrives, at every start:
            # a restart would not help. (Engine keys do apply at a restart, before the first
            # decision.)
            early = [key for key in fixed if key.split(".")[0] not in ENGINE_SECTIONS]
            if early:
                _log.error("configure: %s cannot be set in the runtime's plugin config (in "
                           "use before it arrives); set %s in %s instead", ", ".join(early),
                           "it" if len(early) == 1 else "them", self.path)
            fixed = [key for key in fixed if key not in early]
            if not fixed:
                return
        _log.error("%s: %s changed but need%s a restart; running with the old value%s", why,
                   ", ".join(f"{key} ({_show(value_at(self.current, key))} -> "
                             f"{_show(value_at(new, key))})" for key in fixed),
                   "s" if len(fixed) == 1 else "", "s" if len(fixed) > 1 else "")

    def _replace_engine_for(self, fixed: list[str], new: Config, why: str) -> list[str]:
        """Apply the engine's restart-only keys among ``fixed`` through a new engine if
        nothing was decided yet; return the keys so applied."""
        engine_keys = [key for key in fixed if key.split(".")[0] in ENGINE_SECTIONS]
        if not engine_keys or self.decisions is None:
            return []
        others = [key for key in fixed if key not in engine_keys]
        if not self.decisions.replace_engine(to_settings(with_values_of(new, self.current,
                                                                        others))):
            return []
        _log.info("%s: applied %s before the first decision", why,
                  _assignments(engine_keys, new))
        return engine_keys

    def _apply_live(self, new: Config) -> None:
        if self.decisions is not None:
            self.decisions.reconfigure(to_settings(new))
            self.decisions.exclusive_quota = ExclusiveQuota(new.cpus.exclusive_cpu_quota)
        if self.kernel_updates is not None:
            self.kernel_updates(new.runtime.kernel_updates)
        if (self.systemd_units is not None
                and new.runtime.systemd_units != self.current.runtime.systemd_units):
            self.systemd_units(new.runtime.systemd_units)
        if self.start_grace is not None:
            self.start_grace(new.runtime.start_grace)
        if new.observability.log_level != self.current.observability.log_level:
            self.set_log_level(new.observability.log_level)

    def _rejected(self, why: str, error: ConfigError) -> None:
        _log.error("%s: rejected %s, keeping the last good configuration: %s", why,
                   error.source, "; ".join(str(p) for p in error.problems))

    # -- watching ------------------------------------------------------------------------------

    async def watch(self, interval: float = POLL_INTERVAL) -> None:
        """Reload whenever the file changes (polled every ``interval`` seconds), until
        cancelled. Runs on the event loop, never on an NRI hook."""
        while True:
            await asyncio.sleep(interval)
            try:
                self.check_file()
            except Exception:  # noqa: BLE001 - a bug must not end reloads for good
                _log.exception("reloading %s failed", self.path)

    def check_file(self) -> bool | None:
        """Reload if the file changed since it was last read; return what the reload returned,
        or ``None`` when nothing changed."""
        if stamp(self.path) == self.seen:
            return None
        return self.reload_file("file change")


def _build(path: Path, layers: list[Document], topology: Topology) -> Config:
    """Build from the file, runtime and flag layers; a :class:`ConfigError` names the layers
    its problems come from (a key's last layer), the file when none does."""
    try:
        return build(merge(layers), topology, str(path))
    except ConfigError as error:
        names = (str(path), RUNTIME_SOURCE, "command-line flags")
        origins = {_origin(problem.key, layers) for problem in error.problems}
        source = " + ".join(name for index, name in enumerate(names) if index in origins)
        raise ConfigError(source or str(path), error.problems) from error


def _origin(key: str, layers: list[Document]) -> int:
    section, _, name = key.partition(".")
    name = name.split("[")[0]
    for index in reversed(range(len(layers))):
        table = layers[index].get(section)
        if (not name and section in layers[index]) or (isinstance(table, dict) and name in table):
            return index
    return 0


def _assignments(names: list[str], config: Config) -> str:
    return ", ".join(f"{key} = {_show(value_at(config, key))}" for key in names)


def _show(value: Any) -> str:
    return toml_value(list(value) if isinstance(value, tuple) else value)
