"""Per-NUMA-node memory from a fake sysfs tree: each node's MemTotal in bytes, a memoryless
node's 0, a kernel without NUMA nodes read from /proc/meminfo, and a broken file named."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_adapters.kubernetes.node_memory import NodeMemoryError, read_node_memory

MEMINFO = """Node {n} MemTotal:       {kib} kB
Node {n} MemFree:         1000 kB
Node {n} MemUsed:         2000 kB
"""


def tree(root: Path, nodes: dict[int, int]) -> Path:
    for n, kib in nodes.items():
        directory = root / "devices" / "system" / "node" / f"node{n}"
        directory.mkdir(parents=True)
        (directory / "meminfo").write_text(MEMINFO.format(n=n, kib=kib))
    (root / "devices" / "system" / "node").mkdir(parents=True, exist_ok=True)
    (root / "devices" / "system" / "node" / "possible").write_text("0-3\n")
    return root


def test_each_nodes_total_memory_in_bytes(tmp_path: Path) -> None:
    root = tree(tmp_path, {0: 16_384_000, 1: 8_192_000, 2: 0})
    assert read_node_memory(root) == {0: 16_384_000 * 1024, 1: 8_192_000 * 1024, 2: 0}


def test_nodes_are_numbered_not_sorted_as_text(tmp_path: Path) -> None:
    root = tree(tmp_path, dict.fromkeys(range(12), 1))
    assert list(read_node_memory(root)) == list(range(12))


def test_without_numa_nodes_the_machine_is_node_0(tmp_path: Path) -> None:
    proc = tmp_path / "meminfo"
    proc.write_text("MemTotal:       4096 kB\nMemFree:        1 kB\n")
    assert read_node_memory(tmp_path / "sys", proc) == {0: 4096 * 1024}


def test_a_node_without_its_memtotal_is_named(tmp_path: Path) -> None:
    root = tree(tmp_path, {0: 1})
    broken = root / "devices" / "system" / "node" / "node0" / "meminfo"
    broken.write_text("Node 0 MemFree: 1 kB\n")
    with pytest.raises(NodeMemoryError, match=f"{broken}: no MemTotal line"):
        read_node_memory(root)


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    root = tree(tmp_path, {0: 1})
    (root / "devices" / "system" / "node" / "node0" / "meminfo").unlink()
    with pytest.raises(NodeMemoryError, match="node0/meminfo"):
        read_node_memory(root)
