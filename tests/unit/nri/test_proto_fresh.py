"""The committed generated protobuf modules are what ``tools/genproto.py`` makes of the
committed ``.proto`` files (a stale ``*_pb2.py`` would silently disagree with its schema)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(importlib.util.find_spec("grpc_tools") is None,
                    reason="grpcio-tools is not installed (pip install -e '.[proto]')")
def test_generated_code_is_not_stale() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "genproto.py"), "--check"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
