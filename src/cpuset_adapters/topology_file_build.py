"""From the topology file's structured values to a core ``Topology``: every consistency check,
each failing with an :class:`EntryError` whose message starts with the offending entry."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias

from cpuset_adapters.topology_file_schema import CpuEntry, DistanceTable, TopologyFile
from cpuset_core.cpuset import EMPTY, MAX_ID, CPUSet
from cpuset_core.errors import CpuListSyntaxError
from cpuset_core.topology import CpuInfo, Topology


class EntryError(ValueError):
    """A well-typed entry with an impossible value; the message starts with the entry."""


_DECIMAL: Final = re.compile(r"[0-9]+")


def topology_from_file(raw: TopologyFile) -> Topology:
    infos = _cpu_infos(raw.cpus)
    described = CPUSet(info.cpu for info in infos)
    cpu_nodes = CPUSet(info.numa for info in infos)
    online = (described if raw.online is None
              else _cpu_list("online", raw.online, described, allow_empty=False))
    isolated = (EMPTY if raw.isolated is None
                else _cpu_list("isolated", raw.isolated, described, allow_empty=True))
    distances = _distances(raw.numa_distances, infos)
    memory_nodes = _memory_nodes(raw.memory_nodes, cpu_nodes | CPUSet(distances))
    return Topology(cpus=infos, online=online, isolated=isolated, numa_distances=distances,
                    memory_nodes=memory_nodes)


def _cpu_infos(cpus: Mapping[str, CpuEntry]) -> tuple[CpuInfo, ...]:
    if not cpus:
        raise EntryError("cpus: describes no CPU")
    keys: dict[int, str] = {}
    infos: list[CpuInfo] = []
    for key, entry in cpus.items():
        entry_name = f"cpus[{json.dumps(key)}]"
        cpu = _id(entry_name, key, "CPU id")
        if cpu in keys:
            raise EntryError(f"{entry_name}: CPU {cpu} is already described by "
                              f"cpus[{json.dumps(keys[cpu])}]")
        keys[cpu] = key
        if not 0 <= entry.numa <= MAX_ID:
            raise EntryError(f"{entry_name}.numa: NUMA node {entry.numa} is outside "
                              f"0..{MAX_ID}")
        infos.append(CpuInfo(cpu=cpu, core=entry.core, socket=entry.socket, numa=entry.numa,
                             die=entry.die, l3=entry.l3))
    infos.sort(key=lambda i: i.cpu)
    _check_cores(infos, keys)
    _check_l3(infos, keys)
    return tuple(infos)


def _check_cores(infos: Sequence[CpuInfo], keys: Mapping[int, str]) -> None:
    """Threads of one physical core share its NUMA node and L3 group."""
    first: dict[tuple[int, int, int], CpuInfo] = {}
    for info in infos:
        other = first.setdefault((info.socket, info.die, info.core), info)
        for what, mine, theirs in (("NUMA node", info.numa, other.numa),
                                   ("L3 group", info.l3, other.l3)):
            if mine != theirs:
                raise EntryError(
                    f"cpus[{json.dumps(keys[info.cpu])}]: same core as CPU {other.cpu} (socket "
                    f"{info.socket}, die {info.die}, core {info.core}) but {what} {mine} "
                    f"instead of {theirs}")


def _check_l3(infos: Sequence[CpuInfo], keys: Mapping[int, str]) -> None:
    """An L3 group (a machine-wide id) lies within one socket."""
    first: dict[int, CpuInfo] = {}
    for info in infos:
        if info.l3 is None:
            continue
        other = first.setdefault(info.l3, info)
        if other.socket != info.socket:
            raise EntryError(
                f"cpus[{json.dumps(keys[info.cpu])}]: L3 group {info.l3} is on socket "
                f"{other.socket} (CPU {other.cpu}), not {info.socket}: L3 ids are machine-wide, "
                f"not per socket")


def _id(entry: str, text: str, what: str) -> int:
    if not _DECIMAL.fullmatch(text) or int(text) > MAX_ID:
        raise EntryError(f"{entry}: {what} {json.dumps(text)} is not a number from 0 to "
                          f"{MAX_ID}")
    return int(text)


def _cpu_list(name: str, text: str, described: CPUSet, *, allow_empty: bool) -> CPUSet:
    entry = f"{name} {json.dumps(text)}"
    try:
        cpus = CPUSet.parse(text, allow_empty=allow_empty)
    except CpuListSyntaxError as e:
        raise EntryError(f"{entry}: {e.problem} at position {e.position}") from e
    unknown = cpus - described
    if unknown:
        raise EntryError(f'{entry}: CPU(s) {unknown} are not described in "cpus"')
    return cpus


_Names: TypeAlias = dict[int, tuple[str, dict[int, str]]]
"""For each row of a distance table: the entry naming the row, and those naming its cells."""


def _distances(table: DistanceTable | None,
               infos: Sequence[CpuInfo]) -> dict[int, dict[int, int]]:
    if table is None:
        return {}
    matrix, names = _list_table(table) if isinstance(table, list) else _dict_table(table)
    nodes = CPUSet(matrix)
    for a, row in matrix.items():
        row_name, cell_names = names[a]
        if CPUSet(row) != nodes:
            raise EntryError(f"{row_name}: has distances to node(s) {CPUSet(row) or 'none'} "
                              f"but the table's nodes are {nodes}")
        for b, d in row.items():
            if d <= 0:
                raise EntryError(f"{cell_names[b]}: distance {d} is not positive")
    for info in infos:
        if info.numa not in nodes:
            raise EntryError(f"numa_distances: no row for NUMA node {info.numa} (of CPU "
                              f"{info.cpu})")
    return {a: dict(sorted(row.items())) for a, row in sorted(matrix.items())}


def _list_table(table: list[list[int]]) -> tuple[dict[int, dict[int, int]], _Names]:
    size = len(table)
    if size > MAX_ID + 1:
        raise EntryError(f"numa_distances: {size} nodes exceed the id limit {MAX_ID}")
    for n, cells in enumerate(table):
        if len(cells) != size:
            raise EntryError(f"numa_distances[{n}]: {len(cells)} distances in a "
                              f"{size}-node table (row i and column i are node i)")
    matrix = {a: dict(enumerate(cells)) for a, cells in enumerate(table)}
    names = {a: (f"numa_distances[{a}]", {b: f"numa_distances[{a}][{b}]" for b in range(size)})
             for a in range(size)}
    return matrix, names


def _dict_table(table: dict[str, dict[str, int]]) -> tuple[dict[int, dict[int, int]], _Names]:
    matrix: dict[int, dict[int, int]] = {}
    names: _Names = {}
    for a_key, cells in table.items():
        row_name = f"numa_distances[{json.dumps(a_key)}]"
        a = _id(row_name, a_key, "NUMA node")
        if a in matrix:
            raise EntryError(f"{row_name}: node {a} has two rows")
        row: dict[int, int] = {}
        cell_names: dict[int, str] = {}
        for b_key, d in cells.items():
            cell = f"{row_name}[{json.dumps(b_key)}]"
            b = _id(cell, b_key, "NUMA node")
            if b in row:
                raise EntryError(f"{cell}: node {b} appears twice in the row")
            row[b], cell_names[b] = d, cell
        matrix[a], names[a] = row, (row_name, cell_names)
    return matrix, names


def _memory_nodes(nodes: list[int] | None, known_nodes: CPUSet) -> CPUSet | None:
    if nodes is None:
        return None
    if not nodes:
        raise EntryError("memory_nodes: is empty, so no NUMA node would have memory")
    for n, node in enumerate(nodes):
        if node not in known_nodes:
            raise EntryError(f"memory_nodes[{n}]: NUMA node {node} is neither a CPU's node nor "
                              f"in numa_distances (nodes: {known_nodes})")
    return CPUSet(nodes)
