"""The topology file as a file: missing, a directory, not JSON, not UTF-8 (each named), and any
JSON value gives a topology or a one-line TopologyError, nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpuset_adapters.topology_file import load_topology
from cpuset_core.errors import TopologyError
from tests.unit.adapters.topology_file_documents import _parse, _two_by_two

# -- reading the file ---------------------------------------------------------------------------


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(tmp_path / "nope.json")
    assert str(info.value) == f"{tmp_path / 'nope.json'}: cannot be read: No such file or directory"


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="cannot be read: Is a directory"):
        load_topology(tmp_path)


def test_the_path_is_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("topo.json").write_text("{")
    with pytest.raises(TopologyError) as info:
        load_topology("topo.json")
    assert str(info.value).startswith("topo.json: not valid JSON: ")


@pytest.mark.parametrize(("text", "message"), [
    ("", "not valid JSON: Expecting value at line 1 column 1"),
    ('{"cpus": {"0": {"socket": 0,}}}', "not valid JSON: Expecting property name enclosed in "
                                        "double quotes at line 1 column 29"),
    ('{"cpus": {"7": {"socket": 0}, "7": {"socket": 1}}}',
     'key "7" appears twice in one object'),
])
def test_text_that_is_not_one_json_document_is_reported_with_its_position(
        tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "topo.json"
    path.write_text(text)
    with pytest.raises(TopologyError) as info:
        load_topology(path)
    assert str(info.value) == f"{path}: {message}"


def test_bytes_that_are_not_utf8_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "topo.json"
    path.write_bytes(b'{"cpus": "\xff"}')
    with pytest.raises(TopologyError, match=r"topo.json: is not UTF-8 text: .* at byte 10$"):
        load_topology(path)


# -- nothing else escapes -----------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 9000) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


_KEYS = st.sampled_from(["cpus", "online", "isolated", "numa_distances", "memory_nodes", "0",
                         "1", "socket", "numa", "core", "l3", "die"])


_PATHS = [("cpus",), ("cpus", "0"), ("cpus", "0", "numa"), ("cpus", "1", "l3"),
          ("cpus", "2", "die"), ("cpus", "9"), ("online",), ("isolated",), ("numa_distances",),
          ("numa_distances", "1"), ("numa_distances", "0", "1"), ("memory_nodes",), ("extra",)]


def _check_outcome(data: object) -> None:
    """``data`` reads as a topology, or the only exception is a one-line ``TopologyError``."""
    message = None
    try:
        _parse(data)
    except TopologyError as e:
        message = str(e)
    if message is not None:
        assert message.startswith("topo.json: ")
        assert "\n" not in message


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_KEYS, _JSON | st.dictionaries(_KEYS, _JSON | st.dictionaries(_KEYS, _JSON),
                                                     max_size=4), max_size=5))
def test_any_json_value_gives_a_topology_or_a_topology_error(data: dict[str, Any]) -> None:
    _check_outcome(data)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_PATHS), _JSON)
def test_any_value_anywhere_in_a_good_file_gives_a_topology_or_a_topology_error(
        path: tuple[str, ...], value: object) -> None:
    data = _two_by_two()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    _check_outcome(data)
