"""Log configuration: one structlog renderer (JSON lines or console) for every log call, the
existing ``logging.getLogger(...)`` ones included, and the debug toggle (SIGUSR1).

Events are an event name plus fields passed as ``extra`` (decision events: see
:mod:`cpuset_service.events`); the JSON renderer emits the fields as keys, the console renderer
as ``key=value`` after the event name (``admit container=ns/pod/c id=... kind=... cpus=...``).
"""

from __future__ import annotations

import logging
import sys
from types import FrameType
from typing import Any, Literal, TextIO

import structlog

LogFormat = Literal["json", "console"]
LEVELS = ("debug", "info", "warning", "error")

_STANDARD_KEYS = frozenset({"timestamp", "level", "logger", "event", "exception"})


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
    """Route every log record (stdlib and structlog) through one renderer on ``stream``
    (stderr by default) at ``level``; return the control for the debug toggle.

    Raises ``ValueError`` for an unknown level or format. Calling it again replaces the
    previous configuration.
    """
    if level not in LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LEVELS)}")
    if fmt not in {"json", "console"}:
        raise ValueError(f"log format {fmt!r} is not json or console")
    shared: list[Any] = [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = (structlog.processors.JSONRenderer(sort_keys=False) if fmt == "json"
                     else render_console)
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, renderer])
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(_numeric(level))
    structlog.configure(
        processors=[structlog.stdlib.filter_by_level, *shared,
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False)
    return LogControl(level)


def render_console(_logger: object, _method: str, event: dict[str, Any]) -> str:
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
