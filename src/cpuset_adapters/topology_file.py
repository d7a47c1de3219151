"""A machine's CPU topology as a JSON file: a ``TopologySource`` reading it and a writer.

The format (documented for operators in ``docs/cli.md``)::

    {
      "cpus": {"<cpu id>": {"socket": S, "numa": N, "core": C, "l3": L, "die": D}, ...},
      "online": "0-15",                                   optional, default: every CPU listed
      "isolated": "2-3",                                  optional, default: none
      "numa_distances": {"0": {"0": 10, "1": 32}, ...},   optional; or [[10, 32], [32, 10]]
      "memory_nodes": [0, 1]                              optional, default: every node
    }

* ``core`` is unique within its socket (as the kernel's ``core_id``): CPUs with the same
  ``socket``, ``die`` and ``core`` are sibling threads of one physical core.
* ``l3`` is a machine-wide id of the CPU's last-level-cache group; CPUs without one (``l3``
  absent or ``null``) are grouped with their socket. ``die`` defaults to 0.
* ``online`` and ``isolated`` are strings in the Linux list format (``"0-3,8"``).
* ``numa_distances`` is a complete SLIT matrix: an object of objects keyed by node id, or a list
  of lists whose row and column ``i`` are node ``i``. A node there without CPUs is a memory-only
  node (CXL, HBM).
* ``memory_nodes`` lists the NUMA nodes that have memory (CPU-only nodes exist).

Unknown keys, wrong JSON types and inconsistent facts are all errors: a :class:`TopologyError`
whose one-line message names the file and the offending entry, for example
``topo.json: cpus["7"]: missing "numa"``.

The file is structured with cattrs into the attrs classes below, then checked and turned into a
core :class:`Topology`; :func:`dump_topology` writes any ``Topology`` back in the same format, so
``parse_topology(dump_topology(t)) == t`` for topologies whose CPUs are in ascending order.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn

from cpuset_core.cpuset import EMPTY, MAX_ID, CPUSet
from cpuset_core.errors import CpuListSyntaxError, TopologyError
from cpuset_core.topology import CpuInfo, Topology

# -- the file's shape --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CpuEntry:
    """One value of ``"cpus"``: where a logical CPU sits."""

    socket: int
    die: int = 0
    numa: int
    core: int
    l3: int | None = None


DistanceTable: TypeAlias = dict[str, dict[str, int]] | list[list[int]]
"""``numa_distances``: keyed by node id, or a square list of lists indexed by node id."""


@attrs.frozen(kw_only=True)
class TopologyFile:
    """The whole file, as JSON gives it (ids still strings, CPU lists still text)."""

    cpus: dict[str, CpuEntry]
    online: str | None = None
    isolated: str | None = None
    numa_distances: DistanceTable | None = None
    memory_nodes: list[int] | None = None


# -- the source --------------------------------------------------------------------------------


class TopologyFileSource:
    """A ``TopologySource`` that reads a topology file (see the module docstring) on every
    call."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"TopologyFileSource({str(self._path)!r})"

    def read_topology(self) -> Topology:
        """Read and check the file; raises :class:`TopologyError` naming the file and entry."""
        return load_topology(self._path)


def load_topology(path: str | os.PathLike[str]) -> Topology:
    """Return the topology the file at ``path`` describes; messages name ``path`` as given."""
    name = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise TopologyError(f"{name}: cannot be read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise TopologyError(f"{name}: is not UTF-8 text: {e.reason} at byte {e.start}") from e
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as e:
        raise TopologyError(f"{name}: not valid JSON: {e.msg} at line {e.lineno} "
                            f"column {e.colno}") from e
    except _DuplicateKeyError as e:
        raise TopologyError(f"{name}: {e}") from e
    return parse_topology(data, source=name)


def parse_topology(data: object, *, source: str) -> Topology:
    """Return the topology that ``data`` (the file's parsed JSON) describes.

    Raises :class:`TopologyError` with a message ``"<source>: <entry>: <problem>"``.
    """
    try:
        raw = _CONVERTER.structure(data, TopologyFile)
    except (ClassValidationError, IterableValidationError, _WrongTypeError) as e:
        problems = list(_problems(e, ()))
        raise TopologyError(_one_line(source, problems)) from e
    try:
        return _build(raw)
    except _EntryError as e:
        raise TopologyError(f"{source}: {e}") from e
    except TopologyError as e:  # the core's own consistency checks
        raise TopologyError(f"{source}: {e}") from e


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


# -- structuring with cattrs -------------------------------------------------------------------


class _WrongTypeError(TypeError):
    """A JSON value of the wrong type; the message says what was expected and what came."""


class _EntryError(ValueError):
    """A well-typed entry with an impossible value; the message starts with the entry."""


class _DuplicateKeyError(ValueError):
    pass


def _describe(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _strict(expected: type, what: str) -> Callable[[object, object], Any]:
    """A structure hook that accepts only values of exactly ``expected`` (no ``int("3")``, no
    ``True`` as 1)."""

    def hook(value: object, _: object) -> Any:
        if type(value) is not expected:
            raise _WrongTypeError(f"expected {what}, got {_describe(value)}")
        return value

    return hook


def _checked(expected: type, what: str,
             inner: Callable[[Any, Any], Any]) -> Callable[[object, object], Any]:
    """Wrap a generated hook so a JSON value of the wrong kind is a clear error rather than an
    ``AttributeError`` from deep inside cattrs (or a string iterated as a list)."""

    def hook(value: object, type_: object) -> Any:
        if not isinstance(value, expected):
            raise _WrongTypeError(f"expected {what}, got {_describe(value)}")
        return inner(value, type_)

    return hook


def _structure_distances(value: object, _: object) -> DistanceTable | None:
    if value is None:
        return None
    if isinstance(value, dict):
        by_node: dict[str, dict[str, int]] = _CONVERTER.structure(value, dict[str, dict[str, int]])
        return by_node
    if isinstance(value, list):
        rows: list[list[int]] = _CONVERTER.structure(value, list[list[int]])
        return rows
    raise _WrongTypeError(f"expected an object or a list of lists, got {_describe(value)}")


def _origin(type_: Any) -> object:
    origin: object = get_origin(type_)
    return origin


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(int, _strict(int, "an integer"))
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook_func(lambda t: t in (DistanceTable, DistanceTable | None),
                                           _structure_distances)
    converter.register_structure_hook_factory(
        attrs.has, lambda t: _checked(dict, "an object", make_dict_structure_fn(t, converter)))
    converter.register_structure_hook_factory(
        lambda t: _origin(t) is dict,
        lambda t: _checked(dict, "an object", mapping_structure_factory(t, converter)))
    converter.register_structure_hook_factory(
        lambda t: _origin(t) is list,
        lambda t: _checked(list, "a list", list_structure_factory(t, converter)))
    return converter


_CONVERTER: Final = _make_converter()
_DUMPER: Final = cattrs.Converter(omit_if_default=True)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(f"key {json.dumps(key)} appears twice in one object")
        result[key] = value
    return result


# -- cattrs errors as "entry: problem" lines ----------------------------------------------------

_Segment: TypeAlias = tuple[str, "str | int"]
"""``("attr", name)``, ``("key", key)`` or ``("index", n)``."""


def _path(segments: Sequence[_Segment]) -> str:
    text = ""
    for kind, name in segments:
        if kind == "attr":
            text += f".{name}" if text else str(name)
        elif kind == "key":
            text += f"[{json.dumps(name)}]"
        else:
            text += f"[{name}]"
    return text


def _problems(exc: BaseException, at: tuple[_Segment, ...]) -> Iterator[tuple[str, str]]:
    """Yield ``(entry, problem)`` for every leaf of a cattrs validation error tree."""
    if isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, attr_note in with_notes:
            yield from _problems(sub, (*at, ("attr", attr_note.name)))
        for sub in without:
            yield from _problems(sub, at)
    elif isinstance(exc, IterableValidationError):
        with_index, without = exc.group_exceptions()
        for sub, index_note in with_index:
            kind = "key" if isinstance(index_note.index, str) else "index"
            yield from _problems(sub, (*at, (kind, index_note.index)))
        for sub in without:
            yield from _problems(sub, at)
    elif isinstance(exc, ForbiddenExtraKeysError):
        known = ", ".join(f'"{f.name}"' for f in attrs.fields(exc.cl))
        for key in sorted(exc.extra_fields):
            yield _path(at), f"unknown key {json.dumps(key)} (known: {known})"
    elif isinstance(exc, KeyError) and at and at[-1][0] == "attr":
        yield _path(at[:-1]), f'missing "{at[-1][1]}"'
    else:
        yield _path(at), str(exc)


def _one_line(source: str, problems: Sequence[tuple[str, str]]) -> str:
    if not problems:  # not expected: cattrs always has a leaf; say something useful anyway
        return f"{source}: does not have the topology file's shape"
    entry, problem = problems[0]
    more = len(problems) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{source}: {entry}: {problem}{suffix}" if entry else f"{source}: {problem}{suffix}"


# -- from the file's values to a Topology ------------------------------------------------------

_DECIMAL: Final = re.compile(r"[0-9]+")


def _build(raw: TopologyFile) -> Topology:
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
        raise _EntryError("cpus: describes no CPU")
    keys: dict[int, str] = {}
    infos: list[CpuInfo] = []
    for key, entry in cpus.items():
        entry_name = f"cpus[{json.dumps(key)}]"
        cpu = _id(entry_name, key, "CPU id")
        if cpu in keys:
            raise _EntryError(f"{entry_name}: CPU {cpu} is already described by "
                              f"cpus[{json.dumps(keys[cpu])}]")
        keys[cpu] = key
        if not 0 <= entry.numa <= MAX_ID:
            raise _EntryError(f"{entry_name}.numa: NUMA node {entry.numa} is outside "
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
                raise _EntryError(
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
            raise _EntryError(
                f"cpus[{json.dumps(keys[info.cpu])}]: L3 group {info.l3} is on socket "
                f"{other.socket} (CPU {other.cpu}), not {info.socket}: L3 ids are machine-wide, "
                f"not per socket")


def _id(entry: str, text: str, what: str) -> int:
    if not _DECIMAL.fullmatch(text) or int(text) > MAX_ID:
        raise _EntryError(f"{entry}: {what} {json.dumps(text)} is not a number from 0 to "
                          f"{MAX_ID}")
    return int(text)


def _cpu_list(name: str, text: str, described: CPUSet, *, allow_empty: bool) -> CPUSet:
    entry = f"{name} {json.dumps(text)}"
    try:
        cpus = CPUSet.parse(text, allow_empty=allow_empty)
    except CpuListSyntaxError as e:
        raise _EntryError(f"{entry}: {e.problem} at position {e.position}") from e
    unknown = cpus - described
    if unknown:
        raise _EntryError(f'{entry}: CPU(s) {unknown} are not described in "cpus"')
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
            raise _EntryError(f"{row_name}: has distances to node(s) {CPUSet(row) or 'none'} "
                              f"but the table's nodes are {nodes}")
        for b, d in row.items():
            if d <= 0:
                raise _EntryError(f"{cell_names[b]}: distance {d} is not positive")
    for info in infos:
        if info.numa not in nodes:
            raise _EntryError(f"numa_distances: no row for NUMA node {info.numa} (of CPU "
                              f"{info.cpu})")
    return {a: dict(sorted(row.items())) for a, row in sorted(matrix.items())}


def _list_table(table: list[list[int]]) -> tuple[dict[int, dict[int, int]], _Names]:
    size = len(table)
    if size > MAX_ID + 1:
        raise _EntryError(f"numa_distances: {size} nodes exceed the id limit {MAX_ID}")
    for n, cells in enumerate(table):
        if len(cells) != size:
            raise _EntryError(f"numa_distances[{n}]: {len(cells)} distances in a "
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
            raise _EntryError(f"{row_name}: node {a} has two rows")
        row: dict[int, int] = {}
        cell_names: dict[int, str] = {}
        for b_key, d in cells.items():
            cell = f"{row_name}[{json.dumps(b_key)}]"
            b = _id(cell, b_key, "NUMA node")
            if b in row:
                raise _EntryError(f"{cell}: node {b} appears twice in the row")
            row[b], cell_names[b] = d, cell
        matrix[a], names[a] = row, (row_name, cell_names)
    return matrix, names


def _memory_nodes(nodes: list[int] | None, known_nodes: CPUSet) -> CPUSet | None:
    if nodes is None:
        return None
    if not nodes:
        raise _EntryError("memory_nodes: is empty, so no NUMA node would have memory")
    for n, node in enumerate(nodes):
        if node not in known_nodes:
            raise _EntryError(f"memory_nodes[{n}]: NUMA node {node} is neither a CPU's node nor "
                              f"in numa_distances (nodes: {known_nodes})")
    return CPUSet(nodes)
