"""cpuset_core's public API as text: one line per fact, for the snapshot test.

What counts (docs/library.md, "Compatibility"): every name in ``cpuset_core.__all__`` and what a
caller can see of it: a function's signature; a class's bases, constructor, public methods,
properties, class attributes (such as an error's ``reason``), dataclass fields, the attributes
its ``__init__`` sets, and enum members; a constant's type and value.

The text is the same on every Python 3.11+: annotations are evaluated and written out by this
module (not by ``repr``, which differs between versions), members that a Python version or
``dataclasses`` generate are left out (only functions whose code is in cpuset_core count), and
unordered values are sorted. A name is written as exported (``CPUSet``), whatever module
defines it, so moving code between private modules changes nothing here.

To record a change on purpose, from the repository root (the core needs no virtualenv)::

    PYTHONPATH=src python3 -m tests.unit.core.public_api --update

It refuses while the version in src/cpuset_core/_version.py is the one the snapshot was taken
at: a changed API needs a new version (see CHANGELOG.md). How each export is written is in
public_api_render.py; this module compares and records the snapshot.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import cpuset_core
from tests.unit.core.public_api_render import describe

SNAPSHOT = Path(__file__).with_name("public_api.txt")
HEADER = "# cpuset_core's public API as of version "
UPDATE_COMMAND = "PYTHONPATH=src python3 -m tests.unit.core.public_api --update"
HOW = f"# (the last version that changed it). Written by `{UPDATE_COMMAND}`; not by hand."


def snapshot_text(module: types.ModuleType, version: str) -> str:
    return "\n".join([HEADER + version, HOW, *describe(module)]) + "\n"


def recorded_version(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    return first.removeprefix(HEADER) if first.startswith(HEADER) else ""


def differences(recorded: str, current: list[str]) -> list[str]:
    """Return the lines only one side has, ``-`` recorded and ``+`` current (empty: same API)."""
    old = [line for line in recorded.splitlines() if not line.startswith("#")]
    old_lines, current_lines = set(old), set(current)
    removed = [f"- {line}" for line in old if line not in current_lines]
    added = [f"+ {line}" for line in current if line not in old_lines]
    return removed + added


# -- recording a change on purpose --------------------------------------------------------------


def update() -> int:
    recorded = SNAPSHOT.read_text() if SNAPSHOT.exists() else ""
    current = describe(cpuset_core)
    changed = differences(recorded, current)
    version = cpuset_core.__version__
    if not changed:
        print(f"{SNAPSHOT}: the API is unchanged; nothing to record")
        return 0
    if recorded and recorded_version(recorded) == version:
        print(f"the public API changed, but the version is still {version}:", *changed,
              "Change __version__ in src/cpuset_core/_version.py first, per semantic "
              "versioning (docs/library.md, 'Compatibility'), and say what changed in "
              "CHANGELOG.md.", sep="\n", file=sys.stderr)
        return 1
    SNAPSHOT.write_text(snapshot_text(cpuset_core, version))
    print(f"{SNAPSHOT}: recorded the API of version {version}:", *changed, sep="\n")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: {UPDATE_COMMAND}")
    sys.exit(update())
