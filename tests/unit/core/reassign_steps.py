"""What the live reassignment tests share: every CPU of DUAL_SOCKET and the CPUs a container
owns in the ledger.
"""

from __future__ import annotations

from cpuset_core.engine import CpusetEngine
from tests.unit.core.topologies import DUAL_SOCKET

ALL = DUAL_SOCKET.online


def owned(engine: CpusetEngine, cid: str) -> frozenset[int]:
    return frozenset(engine.ledger.entries[cid].cpus)
