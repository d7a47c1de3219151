"""Writing any ``Topology`` as a topology file (the format is described in ``topology_file``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import cattrs

from cpuset_adapters.topology_file_schema import CpuEntry, DistanceTable, TopologyFile
from cpuset_core.topology import Topology

_DUMPER: Final = cattrs.Converter(omit_if_default=True)


def dump_topology(topology: Topology) -> dict[str, Any]:
    """Return ``topology`` as the file's JSON value (defaults left out)."""
    distances: DistanceTable | None = None
    if topology.numa_distances:
        distances = {str(a): {str(b): d for b, d in sorted(row.items())}
                     for a, row in sorted(topology.numa_distances.items())}
    file = TopologyFile(
        cpus={str(info.cpu): CpuEntry(socket=info.socket, die=info.die, numa=info.numa,
                                      core=info.core, l3=info.l3)
              for info in sorted(topology.cpus, key=lambda i: i.cpu)},
        online=None if topology.online == topology.known else topology.online.format(),
        isolated=topology.isolated.format() or None,
        numa_distances=distances,
        memory_nodes=None if topology.memory_nodes is None else list(topology.memory_nodes),
    )
    dumped: dict[str, Any] = _DUMPER.unstructure(file)
    return dumped


def format_topology(topology: Topology) -> str:
    """Return the file's text for ``topology``: JSON with one line per CPU."""
    data = dump_topology(topology)
    lines = []
    for key, value in data.items():
        if key == "cpus":
            cpus = ",\n".join(f"    {json.dumps(cpu)}: {json.dumps(entry)}"
                              for cpu, entry in value.items())
            lines.append(f'  "cpus": {{\n{cpus}\n  }}')
        elif key == "numa_distances":
            rows = ",\n".join(f"    {json.dumps(node)}: {json.dumps(row)}"
                              for node, row in value.items())
            lines.append(f'  "numa_distances": {{\n{rows}\n  }}')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_topology(topology: Topology, path: str | os.PathLike[str]) -> None:
    """Write ``topology`` to ``path`` in the file format."""
    Path(path).write_text(format_topology(topology), encoding="utf-8")

