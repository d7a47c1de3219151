"""A machine's CPU topology as a JSON file: the ``TopologySource`` reading it.

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

The file is structured with cattrs into the attrs classes of ``topology_file_schema``, then
checked and turned into a core :class:`Topology` (``topology_file_build``);
``topology_file_writer.dump_topology`` writes any ``Topology`` back in the same format, so
``parse_topology(dump_topology(t)) == t`` for topologies whose CPUs are in ascending order.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cattrs.errors import ClassValidationError, IterableValidationError

from cpuset_adapters.topology_file_build import EntryError, topology_from_file
from cpuset_adapters.topology_file_schema import (
    CONVERTER,
    DuplicateKeyError,
    TopologyFile,
    WrongTypeError,
    no_duplicate_keys,
    one_line,
    schema_problems,
)
from cpuset_core.errors import TopologyError
from cpuset_core.topology import Topology

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
        data = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except json.JSONDecodeError as e:
        raise TopologyError(f"{name}: not valid JSON: {e.msg} at line {e.lineno} "
                            f"column {e.colno}") from e
    except DuplicateKeyError as e:
        raise TopologyError(f"{name}: {e}") from e
    return parse_topology(data, source=name)


def parse_topology(data: object, *, source: str) -> Topology:
    """Return the topology that ``data`` (the file's parsed JSON) describes.

    Raises :class:`TopologyError` with a message ``"<source>: <entry>: <problem>"``.
    """
    try:
        raw = CONVERTER.structure(data, TopologyFile)
    except (ClassValidationError, IterableValidationError, WrongTypeError) as e:
        found = list(schema_problems(e, ()))
        raise TopologyError(one_line(source, found)) from e
    try:
        return topology_from_file(raw)
    except EntryError as e:
        raise TopologyError(f"{source}: {e}") from e
    except TopologyError as e:  # the core's own consistency checks
        raise TopologyError(f"{source}: {e}") from e

