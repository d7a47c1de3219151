"""docs/operations.md documents every configuration key, with its default and whether it
applies live, and its example file is valid."""

from __future__ import annotations

import re
from pathlib import Path

from cpuset_adapters.config import LIVE_KEYS, Config, keys, load_text, toml_value, value_at
from tests.unit.core.topologies import DUAL_SOCKET

OPERATIONS = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
ROW = re.compile(r"^\| `([a-z_.]+)` \| `(.*?)` \| (live|restart) \|", re.MULTILINE)


def test_every_key_is_in_the_table_with_its_default_and_when_it_applies() -> None:
    rows = {key: (default, applies) for key, default, applies in ROW.findall(OPERATIONS)}
    assert set(rows) == set(keys())
    for key in keys():
        value = value_at(Config(), key)
        # A key TOML cannot write unset (its default follows another key) reads `unset`.
        default = "unset" if value is None else toml_value(
            list(value) if isinstance(value, tuple) else value)
        assert rows[key] == (default, "live" if key in LIVE_KEYS else "restart"), key


def test_the_example_file_is_valid() -> None:
    section = OPERATIONS[OPERATIONS.index("## Configuration"):]
    example = section[section.index("```toml") + len("```toml"):]
    example = example[:example.index("```")]
    config = load_text(example, DUAL_SOCKET)
    assert config.cpus.reserved == "0-1"
