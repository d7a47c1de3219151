"""The configuration file (TOML) and the runtime's plugin config: schema, loading, checks.

Typical use::

    config = load_file("/etc/nri-cpuset/config.toml", topology, required=False)
    engine = CpusetEngine(topology, to_settings(config))

Every problem is a :class:`ConfigError` whose ``problems`` name the dotted key and the bad
value, for example ``cpus.reserved = "0-x": invalid CPU list: ...``.
"""

from cpuset_adapters.config.changes import LIVE_KEYS, changed_keys, with_values_of
from cpuset_adapters.config.checks import parse_listen
from cpuset_adapters.config.errors import ConfigError, Problem
from cpuset_adapters.config.load import (
    build,
    load_file,
    load_text,
    merge,
    read_document,
    to_settings,
)
from cpuset_adapters.config.schema import (
    DEFAULT_PATH,
    Config,
    Cpus,
    Events,
    Observability,
    Pinning,
    Runtime,
    TopologyPublisher,
    keys,
    value_at,
)
from cpuset_adapters.config.structure import Document, parse_toml, toml_value

__all__ = [
    "DEFAULT_PATH",
    "LIVE_KEYS",
    "Config",
    "ConfigError",
    "Cpus",
    "Document",
    "Events",
    "Observability",
    "Pinning",
    "Problem",
    "Runtime",
    "TopologyPublisher",
    "build",
    "changed_keys",
    "keys",
    "load_file",
    "load_text",
    "merge",
    "parse_listen",
    "parse_toml",
    "read_document",
    "to_settings",
    "toml_value",
    "value_at",
    "with_values_of",
]
