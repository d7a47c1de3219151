"""Fixtures of the CLI's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_adapters.topology_file_writer import write_topology
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    """DUAL_SOCKET_HT as a topology file: 16 CPUs, siblings n and n+8, nodes 0-3,8-11 and
    4-7,12-15."""
    path = tmp_path / "machine.json"
    write_topology(build_topology(DUAL_SOCKET_HT), path)
    return path
