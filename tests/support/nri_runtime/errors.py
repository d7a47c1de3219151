"""What the double raises to the test driving it."""

from __future__ import annotations


class CallError(Exception):
    """The plugin answered with an error status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"code {code}: {message}")
        self.code = code
        self.message = message


class PluginGone(Exception):  # noqa: N818 - reads as the event it is
    """The plugin connection is closed (or was closed because the plugin timed out)."""
