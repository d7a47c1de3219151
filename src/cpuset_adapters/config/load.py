"""Reading configuration documents and turning them into a checked :class:`Config` and the
core's :class:`Settings`.

A configuration is built from layers, lowest first (the built-in defaults under all of them):
the file, the runtime's plugin config (NRI Configure), the command line's explicit flags. Each
layer is a TOML document; a later layer's keys replace an earlier one's, table by table.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import cattrs

from cpuset_adapters.config.checks import reserved_cpus, topology_problems, value_problems
from cpuset_adapters.config.errors import ConfigError, Problem
from cpuset_adapters.config.schema import DEFAULT_RESERVED_NAMESPACES, Config
from cpuset_adapters.config.structure import Document, parse_toml, structure
from cpuset_core import AllocationOptions, Settings, Topology, Unmet

ALLOCATION_OPTIONS: Final = tuple(option.name for option in fields(AllocationOptions))
"""The allocation options, each set by the ``[cpus]`` key of its own name."""

SETTING_OF_KEY: Final[Mapping[str, str]] = MappingProxyType({
    "pinning.annotation": "pin_annotation",
    "pinning.namespaces": "pin_namespaces",
    "cpus.reserved": "system_reserved",
    "cpus.strict_reservation": "strict_reservation",
    "cpus.exclusive_on_isolated": "exclusive_on_isolated",
    **{f"cpus.{name}": f"allocation.{name}" for name in ALLOCATION_OPTIONS},
    "cpus.min_shared_pool": "min_shared_pool",
    "cpus.reserved_namespaces": "reserved_namespaces",
    "cpus.unmet_requests": "unmet_requests",
})
"""The setting (named as in ``Settings.by_name``) each key sets; the other keys (sockets,
listener, logging) are the adapters' own."""

# Values reach it checked (see ``build``): it only turns them into the core's types (enums).
_CORE_VALUES: Final = cattrs.Converter(forbid_extra_keys=True)


def read_document(path: str | os.PathLike[str], *, required: bool) -> Document | None:
    """Return the TOML document in the file at ``path``, or ``None`` when it does not exist and
    is not ``required``. Raises :class:`ConfigError` when it cannot be read or parsed."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if not required:
            return None
        raise ConfigError(source, [Problem("", "the file does not exist")]) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, [Problem("", f"cannot read it: {exc}")]) from exc
    return parse_toml(text, source)


def merge(layers: Iterable[Mapping[str, Any]]) -> Document:
    """Return the layers combined, later keys winning; tables merge key by key."""
    result: Document = {}
    for layer in layers:
        for key, value in layer.items():
            below = result.get(key)
            if isinstance(value, dict) and isinstance(below, dict):
                result[key] = merge([below, value])
            else:
                result[key] = value
    return result


def build(document: Mapping[str, Any], topology: Topology, source: str) -> Config:
    """Return the checked configuration ``document`` describes; raise :class:`ConfigError`
    listing every problem: unknown keys and wrong types, then bad values in the tables that
    were well-typed, and (only for an otherwise valid config) what the machine cannot do."""
    config, problems, failed = structure(document)
    problems += [p for p in value_problems(config) if p.key.split(".")[0] not in failed]
    if problems:
        raise ConfigError(source, problems)
    problems = topology_problems(config, topology)
    if problems:
        raise ConfigError(source, problems)
    return config


def load_text(text: str, topology: Topology, source: str = "from the runtime") -> Config:
    """Return the checked configuration in TOML ``text`` (NRI Configure's plugin config)."""
    return build(parse_toml(text, source), topology, source)


def load_file(path: str | os.PathLike[str], topology: Topology, *,
              required: bool = True) -> Config:
    """Return the checked configuration in the file at ``path`` (the built-in defaults when it
    does not exist and is not ``required``)."""
    document = read_document(path, required=required)
    return build(document or {}, topology, str(path))


def to_settings(config: Config) -> Settings:
    """The core's settings for ``config`` (a checked one)."""
    reserved = reserved_cpus(config)
    namespaces = config.cpus.reserved_namespaces
    if namespaces is None:  # unset: the system's namespace, only when CPUs are reserved for it
        namespaces = DEFAULT_RESERVED_NAMESPACES if reserved else ()
    return Settings(pin_annotation=config.pinning.annotation,
                    pin_namespaces=config.pinning.namespaces,
                    system_reserved=reserved,
                    strict_reservation=config.cpus.strict_reservation,
                    exclusive_on_isolated=config.cpus.exclusive_on_isolated,
                    allocation=allocation_options(config),
                    min_shared_pool=config.cpus.min_shared_pool,
                    reserved_namespaces=namespaces,
                    unmet_requests=Unmet(config.cpus.unmet_requests))


def allocation_options(config: Config) -> AllocationOptions:
    """The allocation options ``config`` (a checked one) sets, each from its ``[cpus]`` key."""
    values = {name: getattr(config.cpus, name) for name in ALLOCATION_OPTIONS}
    return _CORE_VALUES.structure(values, AllocationOptions)
