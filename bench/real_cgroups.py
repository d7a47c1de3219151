"""Real cgroup v1 cpuset directories for the benchmarks that time the kernel's own files
(``bench/kernel_writes.py``, ``bench/verify_reads.py``): a parent under the root with N
children, each on the root's CPUs and memory nodes, no processes in them. Root only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CPUSET = ROOT / "cpuset"
SETS = ("cpuset.cpus", "cpuset.mems")


@contextlib.contextmanager
def cpuset_children(name: str, count: int) -> Iterator[tuple[Path, dict[str, str]]]:
    """``/sys/fs/cgroup/cpuset/<name>/c0 … c<count-1>``: yields the parent and each child's
    id (``c<n>``) → cgroup path (as a runtime reports it, ``/<name>/c<n>``); removes them on
    the way out, children first. Whatever keeps a child's file open must close it first (an
    open file pins a removed cgroup as a dying one)."""
    parent = CPUSET / name
    paths = {f"c{n}": f"/{name}/c{n}" for n in range(count)}
    parent.mkdir()
    try:
        for file in SETS:
            (parent / file).write_text((CPUSET / file).read_text())
        for path in paths.values():
            child = CPUSET / path.lstrip("/")
            child.mkdir()
            for file in SETS:
                (child / file).write_text((parent / file).read_text())
        yield parent, paths
    finally:
        for path in paths.values():
            child = CPUSET / path.lstrip("/")
            if child.exists():
                child.rmdir()
        parent.rmdir()
