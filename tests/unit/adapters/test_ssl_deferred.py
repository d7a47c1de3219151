"""``import_without_ssl`` refuses modules it does not know to take a no-TLS path, and does
nothing once ``ssl`` is loaded (its effect on a fresh daemon: tests/unit/cli/
test_daemon_imports.py)."""

from __future__ import annotations

import ssl
import sys

import pytest

from cpuset_adapters.ssl_deferred import IN_PASSING, import_without_ssl


def test_a_module_not_known_to_import_ssl_in_passing_is_refused() -> None:
    with pytest.raises(ValueError, match=r"urllib\.request"):
        import_without_ssl("asyncio", "urllib.request")


def test_with_ssl_loaded_it_leaves_ssl_as_it_was() -> None:
    import_without_ssl(*sorted(IN_PASSING))
    assert sys.modules["ssl"] is ssl
