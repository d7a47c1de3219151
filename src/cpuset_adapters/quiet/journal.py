"""The journal of originals: every file the plugin changed outside container cgroups, with the
value it had before, kept on disk before the first change so that a plugin killed with -9 puts
it back at its next start.

Its default home is under ``/run`` (a tmpfs): what it restores is the kernel's state since
boot, and a reboot resets that state, so a journal surviving a reboot would write stale values.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

VERSION: Final = 1


class JournalError(Exception):
    """The journal cannot be read (not this plugin's format) or written."""


class QuietJournal:
    """Path → original text of every file changed; saved atomically (a temporary file renamed
    over it) so a crash leaves the old journal or the new one, never half of one."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._originals: dict[str, str] = self._load()
        self._saved = dict(self._originals)

    @property
    def originals(self) -> Mapping[str, str]:
        return dict(self._originals)

    def remember(self, path: str, original: str) -> None:
        """Keep ``original`` for ``path`` unless one is kept already (the first is the node's)."""
        self._originals.setdefault(path, original)

    def forget(self, path: str) -> None:
        self._originals.pop(path, None)

    def save(self) -> None:
        """Write the journal when it changed (removed when empty). Raises :class:`JournalError`."""
        if self._originals == self._saved:
            return
        try:
            if not self._originals:
                self.path.unlink(missing_ok=True)
            else:
                self._write()
        except OSError as exc:
            raise JournalError(f"cannot write the journal {self.path}: {exc}") from exc
        self._saved = dict(self._originals)

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        text = json.dumps({"version": VERSION, "originals": self._originals}, indent=1,
                          sort_keys=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself survives a crash
        finally:
            os.close(directory)

    def _load(self) -> dict[str, str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise JournalError(f"cannot read the journal {self.path}: {exc}") from exc
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise JournalError(f"the journal {self.path} is not JSON: {exc}") from exc
        originals = document.get("originals") if isinstance(document, dict) else None
        if (not isinstance(document, dict) or document.get("version") != VERSION
                or not isinstance(originals, dict)
                or not all(isinstance(k, str) and isinstance(v, str)
                           for k, v in originals.items())):
            raise JournalError(f"the journal {self.path} is not a version-{VERSION} journal "
                               f"of originals")
        return dict(originals)
