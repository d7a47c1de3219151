"""The benchmarks' own modules (``bench/``) importable by their unit tests."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = str(Path(__file__).resolve().parents[3] / "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)
