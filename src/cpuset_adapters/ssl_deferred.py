"""Loads the standard-library modules that import ``ssl`` only in passing (``asyncio``,
``http.client``) without it, so the daemon holds no TLS until it makes a TLS connection.

``ssl`` costs the daemon 4.2 MiB resident (libssl and libcrypto loaded and relocated), and
``asyncio.base_events`` imports it at import time though the daemon's event loop only ever
speaks over unix sockets; ``http.client`` imports it to define ``HTTPSConnection`` (the
daemon no longer loads ``http.client``: the API client speaks HTTP itself, ``kubernetes/
http11.py``). Imported while ``ssl`` cannot be, both take their documented no-TLS path;
``ssl`` itself stays importable, and the API client, the one part of the daemon that may speak
TLS, loads it when its credentials ask for it and opens its TLS connections itself.
Decision 56.
"""

from __future__ import annotations

import importlib
import sys
from typing import Final

IN_PASSING: Final = frozenset({"asyncio", "http.client"})
"""What the daemon imports that would load ``ssl`` at import time for a path it never takes."""


def import_without_ssl(*names: str) -> None:
    """Import ``names`` (of :data:`IN_PASSING`) with ``ssl`` unavailable meanwhile; nothing
    when ``ssl`` is already loaded (it is then paid for) or when they are (they then hold
    it). Raises ``ValueError`` for a module not known to take a no-TLS path."""
    unknown = set(names) - IN_PASSING
    if unknown:
        raise ValueError(f"not known to import ssl only in passing: {sorted(unknown)}")
    if "ssl" in sys.modules or all(name in sys.modules for name in names):
        return
    # A None entry makes ``import ssl`` raise ImportError (the import system's own way to
    # block a module), which is what both modules expect on a Python built without ssl.
    sys.modules["ssl"] = None  # type: ignore[assignment]
    try:
        for name in names:
            importlib.import_module(name)
    finally:
        if sys.modules.get("ssl", "loaded") is None:
            del sys.modules["ssl"]
