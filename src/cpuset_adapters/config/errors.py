"""The configuration's one error type: every problem names its dotted key and the bad value."""

from __future__ import annotations

from collections.abc import Sequence

import attrs


@attrs.frozen
class Problem:
    """One thing wrong with a configuration, rendered ``key = value: what is wrong``."""

    key: str
    """Dotted key (``cpus.reserved``, ``pinning.namespaces[1]``); ``""`` for the document."""
    message: str
    value: str | None = None
    """The offending value as written in TOML, or ``None`` when there is none (an unknown
    table, a syntax error)."""

    def __str__(self) -> str:
        if self.value is None:
            return f"{self.key}: {self.message}" if self.key else self.message
        return f"{self.key} = {self.value}: {self.message}"


class ConfigError(ValueError):
    """A configuration that cannot be used; ``problems`` lists every reason."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(f"invalid configuration {source} ({count} problem"
                         f"{'s' if count != 1 else ''}):\n{lines}")
