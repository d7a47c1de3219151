"""A deployment file's YAML documents, for the tests that read manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def documents(path: Path) -> list[dict[str, Any]]:
    """Every non-empty document of ``path``."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def one(path: Path, kind: str) -> dict[str, Any]:
    """The one document of ``kind`` in ``path`` (fails on none or several)."""
    [found] = [d for d in documents(path) if d["kind"] == kind]
    return found
