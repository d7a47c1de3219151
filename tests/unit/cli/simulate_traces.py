"""What the simulate tests share: the topologies, trace builders and ways to run a trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli.commands.simulate import make_simulate
from cpuset_core import Topology
from cpuset_lab.machines import DUAL_SOCKET_HT, EPYC_LIKE, build_topology

# DUAL_SOCKET_HT: 16 CPUs, NUMA node 0 = 0-3,8-11, node 1 = 4-7,12-15, siblings n and n+8,
# one L3 group per node.
DUAL = build_topology(DUAL_SOCKET_HT)


# EPYC_LIKE: 32 CPUs, 2 NUMA nodes of 2 L3 groups of 4 cores: L3 0-3,16-19 / 4-7,20-23 / …
EPYC = build_topology(EPYC_LIKE)


def add(ident: int, request: int | None = None, pinned: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"op": "add", "id": ident}
    if request is not None:
        event["request"] = request
    if pinned is not None:
        event["pinned"] = pinned
    return event


def delete(ident: int) -> dict[str, Any]:
    return {"op": "del", "id": ident}


def trace(*events: dict[str, Any]) -> dict[str, Any]:
    return {"events": list(events)}


def invoke(tmp_path: Path, document: object, *args: str,
           topology: Topology = DUAL) -> tuple[int, str, str]:
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(document if isinstance(document, str) else json.dumps(document))
    command = make_simulate(lambda _path: StaticTopologySource(topology))
    result = CliRunner().invoke(command, ["--topology", str(tmp_path / "machine.json"),
                                          "--trace", str(trace_file), *args])
    return result.exit_code, result.stdout, result.stderr
