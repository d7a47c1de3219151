"""Reading the machine's CPU topology from Linux sysfs into a core ``Topology``."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cpuset_core.cpuset import EMPTY, CPUSet
from cpuset_core.errors import CpuListSyntaxError, TopologyError
from cpuset_core.topology import CpuInfo, Topology

_CPU_ENTRY: Final = re.compile(r"cpu([0-9]+)")
_NODE_ENTRY: Final = re.compile(r"node([0-9]+)")
_CACHE_ENTRY: Final = re.compile(r"index([0-9]+)")
# Signed on purpose: some architectures report an unknown package or die as -1.
_ID: Final = re.compile(r"-?[0-9]+")
_DISTANCE: Final = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class _L3:
    """A CPU's level-3 ``shared_cpu_list`` and the file it came from."""

    cpus: CPUSet
    source: Path


@dataclass(frozen=True, slots=True)
class _RawCpu:
    """One CPU's ``topology/`` and L3 facts, before NUMA nodes and L3 group ids are known."""

    core: int
    socket: int
    die: int
    l3: _L3 | None


@dataclass(frozen=True, slots=True)
class _Numa:
    node_of: Mapping[int, int]
    distances: Mapping[int, Mapping[int, int]]
    memory_nodes: CPUSet | None


class SysfsTopologySource:
    """A ``TopologySource`` that reads ``<root>/devices/system/{cpu,node}`` on every call."""

    def __init__(self, root: str | os.PathLike[str] = "/sys") -> None:
        self._root = Path(root)

    @property
    def root(self) -> Path:
        return self._root

    def __repr__(self) -> str:
        return f"SysfsTopologySource({str(self._root)!r})"

    def read_topology(self) -> Topology:
        """Read the topology afresh; raises :class:`TopologyError` naming the file at fault."""
        system = self._root / "devices" / "system"
        cpu_dir = system / "cpu"
        online_path = cpu_dir / "online"
        online = _parse_list(online_path, _read(online_path))
        _check_within(online_path, online, cpu_dir / "present")
        _check_within(online_path, online, cpu_dir / "possible")

        raw = _read_cpus(cpu_dir, online)
        numa = _read_numa(system / "node", cpu_dir, raw, online)
        described = {cpu: facts for cpu, facts in raw.items() if cpu in numa.node_of}

        l3_ids = _number_l3_groups(described.values())
        cpus = tuple(
            CpuInfo(cpu=cpu, core=facts.core, socket=facts.socket, numa=numa.node_of[cpu],
                    die=facts.die, l3=None if facts.l3 is None else l3_ids[facts.l3.cpus])
            for cpu, facts in sorted(described.items()))

        isolated_path = cpu_dir / "isolated"
        isolated_text = _read_optional(isolated_path)
        isolated = (EMPTY if isolated_text is None
                    else _parse_list(isolated_path, isolated_text, allow_empty=True))
        # isolcpus= may name CPUs that are offline or absent; nothing can be placed on a CPU the
        # topology does not describe, and the next read picks it up once it comes online.
        isolated &= CPUSet(described)

        return Topology(cpus=cpus, online=online, isolated=isolated,
                        numa_distances=numa.distances, memory_nodes=numa.memory_nodes)


def _read_cpus(cpu_dir: Path, online: CPUSet) -> dict[int, _RawCpu]:
    entries = _numbered_entries(cpu_dir, _CPU_ENTRY)
    found = CPUSet(cpu for cpu, _ in entries or ())
    missing = online - found
    if missing:
        raise TopologyError(f"{cpu_dir}: online CPU(s) {missing} (from {cpu_dir / 'online'}) "
                            f"have no cpuN directory")
    raw: dict[int, _RawCpu] = {}
    for cpu, path in entries or ():
        topology = path / "topology"
        if not topology.is_dir():
            # Kernels remove topology/ (and cache/) when a CPU goes offline; such a CPU cannot
            # run anything, so leaving it out is accurate. An online one must be described.
            if cpu in online:
                raise TopologyError(f"{topology}: missing, but CPU {cpu} is online")
            continue
        raw[cpu] = _RawCpu(
            core=_read_id(topology / "core_id"),
            socket=_read_id(topology / "physical_package_id"),
            # die_id appeared in Linux 5.2; before that every package was one die.
            die=_read_id(topology / "die_id", default=0),
            l3=_read_l3(path / "cache", cpu),
        )
    return raw


def _read_l3(cache_dir: Path, cpu: int) -> _L3 | None:
    for _, index in _numbered_entries(cache_dir, _CACHE_ENTRY) or ():
        if _read_id(index / "level") != 3:
            continue
        shared_path = index / "shared_cpu_list"
        shared = _parse_list(shared_path, _read(shared_path))
        if cpu not in shared:
            raise TopologyError(f"{shared_path}: {shared.format()!r} does not contain CPU {cpu} "
                                f"itself")
        return _L3(shared, shared_path)
    # No cache/ (some VMs and architectures) or no level-3 cache: Topology then groups by socket.
    return None


def _number_l3_groups(cpus: Iterable[_RawCpu]) -> dict[CPUSet, int]:
    """Give each distinct ``shared_cpu_list`` an id, in order of its lowest CPU."""
    sources: dict[CPUSet, Path] = {}
    for facts in cpus:
        if facts.l3 is not None:
            sources.setdefault(facts.l3.cpus, facts.l3.source)
    ids: dict[CPUSet, int] = {}
    seen, seen_path = EMPTY, None
    for group in sorted(sources, key=CPUSet.first):
        if not group.isdisjoint(seen):
            # Partly overlapping caches would put a CPU in two groups; the files disagree.
            raise TopologyError(f"{sources[group]}: {group.format()!r} overlaps another CPU's "
                                f"L3 group (e.g. {seen_path})")
        ids[group] = len(ids)
        seen, seen_path = seen | group, sources[group]
    return ids


def _read_numa(node_dir: Path, cpu_dir: Path, cpus: Collection[int], online: CPUSet) -> _Numa:
    nodes = _numbered_entries(node_dir, _NODE_ENTRY)
    if not nodes:
        # CONFIG_NUMA=n: no node directory at all, one memory domain, no distance table.
        return _Numa(node_of=dict.fromkeys(cpus, 0), distances={}, memory_nodes=None)

    node_of: dict[int, int] = {}
    for node, path in nodes:
        cpulist_path = path / "cpulist"
        # Memory-only nodes (CXL, HBM, or all their CPUs offline) have an empty cpulist.
        for cpu in _parse_list(cpulist_path, _read(cpulist_path), allow_empty=True):
            if cpu in node_of:
                raise TopologyError(f"{cpulist_path}: CPU {cpu} is also listed by node "
                                    f"{node_of[cpu]}")
            node_of[cpu] = node
    for cpu in cpus:
        if cpu not in node_of:
            # x86 drops an offline CPU from its node's cpulist, but the cpuN/nodeM link stays.
            linked = _linked_node(cpu_dir / f"cpu{cpu}")
            if linked is not None:
                node_of[cpu] = linked
            elif cpu in online:
                raise TopologyError(f"{node_dir}: online CPU {cpu} is in no node's cpulist")

    ids = [node for node, _ in nodes]
    distances = {node: _read_distance_row(path / "distance", ids) for node, path in nodes}

    has_memory_path = node_dir / "has_memory"
    has_memory = _read_optional(has_memory_path)
    memory_nodes = None if has_memory is None else _parse_list(has_memory_path, has_memory)
    return _Numa(node_of={cpu: node_of[cpu] for cpu in cpus if cpu in node_of},
                 distances=distances, memory_nodes=memory_nodes)


def _linked_node(cpu_path: Path) -> int | None:
    links = _numbered_entries(cpu_path, _NODE_ENTRY) or []
    if len(links) > 1:
        raise TopologyError(f"{cpu_path}: links to several NUMA nodes "
                            f"({', '.join(str(path.name) for _, path in links)})")
    return links[0][0] if links else None


def _read_distance_row(path: Path, ids: list[int]) -> dict[int, int]:
    text = _read(path)
    fields = text.split()
    if len(fields) != len(ids) or not all(_DISTANCE.fullmatch(f) for f in fields):
        raise TopologyError(f"{path}: expected {len(ids)} distances (one per node "
                            f"{CPUSet(ids).format()}), got {text.strip()!r}")
    return {other: int(field) for other, field in zip(ids, fields, strict=True)}


def _check_within(online_path: Path, online: CPUSet, bound_path: Path) -> None:
    text = _read_optional(bound_path)
    if text is None:
        return
    bound = _parse_list(bound_path, text)
    if not online.issubset(bound):
        raise TopologyError(f"{online_path}: online CPU(s) {online - bound} are not in "
                            f"{bound_path} ({text.strip()!r})")


# -- reading and parsing single files ----------------------------------------------------------


def _read(path: Path) -> str:
    text = _read_optional(path)
    if text is None:
        raise TopologyError(f"{path}: required file is missing")
    return text


def _read_optional(path: Path) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise TopologyError(f"{path}: cannot be read: {e}") from e


def _read_id(path: Path, *, default: int | None = None) -> int:
    text = _read_optional(path)
    if text is None:
        if default is None:
            raise TopologyError(f"{path}: required file is missing")
        return default
    if not _ID.fullmatch(text.strip()):
        raise TopologyError(f"{path}: expected an integer, got {text!r}")
    return int(text)


def _parse_list(path: Path, text: str, *, allow_empty: bool = False) -> CPUSet:
    try:
        return CPUSet.parse(text, allow_empty=allow_empty)
    except CpuListSyntaxError as e:
        raise TopologyError(f"{path}: invalid CPU list {text!r}: {e.problem} "
                            f"at position {e.position}") from e
    except ValueError as e:
        raise TopologyError(f"{path}: invalid CPU list {text!r}: {e}") from e


def _numbered_entries(directory: Path, pattern: re.Pattern[str]) -> list[tuple[int, Path]] | None:
    """Return ``(n, path)`` for each entry named by ``pattern``, by ``n``; ``None`` when
    ``directory`` does not exist."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise TopologyError(f"{directory}: cannot be listed: {e}") from e
    entries: list[tuple[int, Path]] = []
    for name in names:
        match = pattern.fullmatch(name)
        if match:
            entries.append((int(match.group(1)), directory / name))
    entries.sort()
    return entries
