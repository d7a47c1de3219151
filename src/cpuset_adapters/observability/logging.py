"""Log configuration: one renderer (JSON lines or console) for every log call, the existing
``logging.getLogger(...)`` ones included, and the debug toggle (SIGUSR1).

Events are an event name plus fields passed as ``extra`` (decision events: see
:mod:`cpuset_service.events`); the JSON renderer emits the fields as keys, the console renderer
as ``key=value`` after the event name (``admit container=ns/pod/c id=... kind=... cpus=...``).
A stdlib ``Formatter`` does it: structlog, which rendered these lines before, took 4-7 MiB of
the daemon's 40 MiB budget (it imports rich) for what is one dictionary per record
(docs/decisions.md, item 28).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from types import FrameType
from typing import Any, Literal, TextIO

LogFormat = Literal["json", "console"]
LEVELS = ("debug", "info", "warning", "error")

_STANDARD_KEYS = frozenset({"timestamp", "level", "logger", "event", "exception"})

QUIET_LIBRARIES = ("hpack", "h2")
"""Libraries whose debug records describe their wire, not the plugin's work: every header a CRI
call encodes is a record (dozens per call), which would drown the plugin's own debug lines
and cost CPU. They log at warning and above whatever the plugin's level."""


class LogControl:
    """The configured level and the runtime debug toggle."""

    def __init__(self, level: str) -> None:
        self.level = level

    def set_level(self, level: str) -> None:
        """Make ``level`` the configured level (a reload) and apply it now."""
        self.level = level
        logging.getLogger().setLevel(_numeric(level))

    def toggle_debug(self, _signum: int | None = None, _frame: FrameType | None = None) -> None:
        """Switch between the configured level and debug (``info`` and debug when debug is the
        configured level); usable as a signal handler. The switch is logged."""
        root = logging.getLogger()
        configured = _numeric(self.level)
        if root.level == logging.DEBUG:
            new = configured if configured != logging.DEBUG else logging.INFO
        else:
            new = logging.DEBUG
        root.setLevel(new)
        # At warning, so the switch shows whatever the level switched to.
        logging.getLogger("nri_cpuset").warning("log level switched to %s (SIGUSR1 toggles)",
                                                logging.getLevelName(new).lower())


def configure_logging(level: str = "info", fmt: LogFormat = "console",
                      stream: TextIO | None = None) -> LogControl:
    """Route every log record through one renderer on ``stream``
    (stderr by default) at ``level``; return the control for the debug toggle.

    Raises ``ValueError`` for an unknown level or format. Calling it again replaces the
    previous configuration.
    """
    if level not in LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LEVELS)}")
    if fmt not in {"json", "console"}:
        raise ValueError(f"log format {fmt!r} is not json or console")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(EventFormatter(fmt))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(_numeric(level))
    for library in QUIET_LIBRARIES:
        logging.getLogger(library).setLevel(logging.WARNING)
    return LogControl(level)


_RECORD_KEYS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
"""What every ``LogRecord`` has; anything else on a record came as ``extra``: its fields."""


class EventFormatter(logging.Formatter):
    """Renders a record as its event (the message), level, logger, UTC timestamp, fields (the
    record's ``extra``) and traceback: one JSON object, or one console line."""

    def __init__(self, fmt: LogFormat) -> None:
        super().__init__()
        self._json = fmt == "json"

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "event": record.getMessage(), "level": record.levelname.lower(),
            "logger": record.name,
            "timestamp": datetime.fromtimestamp(record.created, UTC).strftime(
                "%Y-%m-%dT%H:%M:%S.%fZ")}
        event.update((k, v) for k, v in vars(record).items() if k not in _RECORD_KEYS)
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        if self._json:
            return json.dumps(event, default=repr)
        return render_console(event)


def render_console(event: dict[str, Any]) -> str:
    """``<timestamp> <LEVEL> <logger>: <event>`` then every field (``key=value``, values with
    spaces quoted), then the traceback if there is one."""
    line = (f"{event.get('timestamp', '')} {str(event.get('level', '')).upper()} "
            f"{event.get('logger', '')}: {event.get('event', '')}")
    extra = [f"{k}={_value(v)}" for k, v in event.items() if k not in _STANDARD_KEYS]
    if extra:
        line += " " + " ".join(extra)
    if "exception" in event:
        line += "\n" + str(event["exception"])
    return line


def _value(value: object) -> str:
    text = str(value)
    return repr(text) if not text or any(c.isspace() for c in text) else text


def _numeric(level: str) -> int:
    return int(logging.getLevelName(level.upper()))
