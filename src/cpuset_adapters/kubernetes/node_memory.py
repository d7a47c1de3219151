"""Per-NUMA-node memory, read from sysfs: ``<root>/devices/system/node/node<N>/meminfo``.

The NodeResourceTopology object needs each zone's memory: a topology-aware scheduler aligns
every resource a Guaranteed pod asks for, so a zone without ``memory`` fits no such pod. The
root is the topology source's (``--sysfs-root``), so tests read fake trees.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

_NODE_ENTRY: Final = re.compile(r"node([0-9]+)")
_MEM_TOTAL: Final = re.compile(r"^Node\s+(\d+)\s+MemTotal:\s+(\d+)\s+kB\s*$", re.MULTILINE)
_PROC_MEM_TOTAL: Final = re.compile(r"^MemTotal:\s+(\d+)\s+kB\s*$", re.MULTILINE)


class NodeMemoryError(OSError):
    """The memory of the machine's NUMA nodes cannot be read."""


def read_node_memory(sysfs_root: str | os.PathLike[str],
                     proc_meminfo: str | os.PathLike[str] = "/proc/meminfo",
                     ) -> Mapping[int, int]:
    """Return NUMA node id → total memory in bytes (``MemTotal``; 0 for a memoryless node).

    A kernel without NUMA support has no node directories: the whole machine is then node 0,
    with ``proc_meminfo``'s ``MemTotal``. Raises :class:`NodeMemoryError` naming the file at
    fault.
    """
    node_dir = Path(sysfs_root) / "devices" / "system" / "node"
    try:
        entries = sorted(node_dir.iterdir()) if node_dir.is_dir() else []
    except OSError as exc:
        raise NodeMemoryError(f"{node_dir}: {exc}") from exc
    nodes = [(int(m.group(1)), entry) for entry in entries
             if (m := _NODE_ENTRY.fullmatch(entry.name))]
    if not nodes:
        return {0: _kib(_read(Path(proc_meminfo)), _PROC_MEM_TOTAL, Path(proc_meminfo))}
    return {node: _kib(_read(entry / "meminfo"), _MEM_TOTAL, entry / "meminfo")
            for node, entry in sorted(nodes)}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise NodeMemoryError(f"{path}: {exc}") from exc


def _kib(text: str, pattern: re.Pattern[str], path: Path) -> int:
    found = pattern.search(text)
    if found is None:
        raise NodeMemoryError(f"{path}: no MemTotal line")
    return int(found.group(found.lastindex or 1)) * 1024
