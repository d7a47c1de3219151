"""``python -m cpuset_soak [--minutes M] [--seed S] [--runtime 1.7|2.x] [--replay FILE] ...``:
the chaos soak (``cpuset_soak.main``; root, ``scripts/install-containerd`` first)."""

from __future__ import annotations

import sys

from cpuset_soak.main import main

if __name__ == "__main__":
    sys.exit(main())
