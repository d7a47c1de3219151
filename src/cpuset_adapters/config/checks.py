"""Value checks for a typed :class:`Config`: choices, CPU lists, paths, the listen address, and
what this machine's topology allows. Each check returns problems; none raises."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from cpuset_adapters.config.errors import Problem
from cpuset_adapters.config.schema import (
    ALIGNMENT_SCOPES,
    ALIGNMENTS,
    EXCLUSIVE_CPU_QUOTA,
    LOG_FORMATS,
    LOG_LEVELS,
    MEMORY_BINDINGS,
    SPANNING,
    TOPOLOGY_POLICIES,
    UNMET_REQUESTS,
    Config,
)
from cpuset_adapters.config.structure import toml_value
from cpuset_adapters.listen_address import parse_listen
from cpuset_core import CpuListSyntaxError, CPUSet, Topology

__all__ = ["parse_listen", "reserved_cpus", "topology_problems", "value_problems"]

_NODE_NAME: Final = re.compile(r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                               r"(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
"""A Kubernetes node name: a DNS subdomain (RFC 1123)."""

MAX_UNIX_SOCKET_PATH: Final = 107
"""``sun_path`` holds 108 bytes including the terminating NUL."""


def reserved_cpus(config: Config) -> CPUSet:
    """``cpus.reserved`` as a set (call after :func:`value_problems` found none)."""
    return CPUSet.parse(config.cpus.reserved, allow_empty=True)


def value_problems(config: Config) -> list[Problem]:
    """Problems that need no knowledge of the machine."""
    return [*_pinning(config), *_cpus(config), *_paths(config), *_observability(config),
            *_topology_publisher(config), *_events(config)]


def _bad(key: str, value: object, message: str) -> Problem:
    return Problem(key, message, toml_value(value))


def _choice(key: str, value: str, allowed: tuple[str, ...]) -> Iterator[Problem]:
    if value not in allowed:
        yield _bad(key, value, f"must be one of {', '.join(allowed)}")


def _pinning(config: Config) -> Iterator[Problem]:
    annotation = config.pinning.annotation
    if not annotation or any(c.isspace() for c in annotation):
        yield _bad("pinning.annotation", annotation,
                   "must be a non-empty annotation key without whitespace")
    yield from _namespace_patterns("pinning.namespaces", config.pinning.namespaces)


def _namespace_patterns(key: str, patterns: tuple[str, ...]) -> Iterator[Problem]:
    for index, pattern in enumerate(patterns):
        if not pattern:
            yield _bad(f"{key}[{index}]", pattern, "empty pattern")
        elif pattern != pattern.strip():
            yield _bad(f"{key}[{index}]", pattern,
                       "leading or trailing whitespace never matches a namespace")


def _cpus(config: Config) -> Iterator[Problem]:
    try:
        CPUSet.parse(config.cpus.reserved, allow_empty=True)
    except CpuListSyntaxError as exc:
        yield _bad("cpus.reserved", config.cpus.reserved,
                   f"invalid CPU list: {exc.problem} at position {exc.position}")
    yield from _choice("cpus.numa_spanning", config.cpus.numa_spanning, SPANNING)
    yield from _choice("cpus.alignment", config.cpus.alignment, ALIGNMENTS)
    yield from _choice("cpus.alignment_scope", config.cpus.alignment_scope, ALIGNMENT_SCOPES)
    yield from _choice("cpus.bind_memory", config.cpus.bind_memory, MEMORY_BINDINGS)
    yield from _choice("cpus.exclusive_cpu_quota", config.cpus.exclusive_cpu_quota,
                       EXCLUSIVE_CPU_QUOTA)
    yield from _namespace_patterns("cpus.reserved_namespaces",
                                   config.cpus.reserved_namespaces or ())
    yield from _choice("cpus.unmet_requests", config.cpus.unmet_requests, UNMET_REQUESTS)
    if config.cpus.min_shared_pool < 0:
        yield _bad("cpus.min_shared_pool", config.cpus.min_shared_pool, "must be 0 or more")


def _paths(config: Config) -> Iterator[Problem]:
    runtime = config.runtime
    sockets = {"runtime.nri_socket": (runtime.nri_socket, False),
               "runtime.cri_socket": (runtime.cri_socket, False),
               "runtime.status_socket": (runtime.status_socket, True)}
    for key, (path, may_be_empty) in sockets.items():
        if may_be_empty and not path:
            continue
        if not path.startswith("/"):
            yield _bad(key, path, "must be an absolute path" +
                       (' ("" disables it)' if may_be_empty else ""))
        elif len(path.encode()) > MAX_UNIX_SOCKET_PATH:
            yield _bad(key, path, f"longer than the {MAX_UNIX_SOCKET_PATH} bytes a unix socket "
                                  "path may have")
    for key, path in (("runtime.kubelet_cpu_manager_state", runtime.kubelet_cpu_manager_state),
                      ("runtime.cgroup_root", runtime.cgroup_root)):
        if not path.startswith("/"):
            yield _bad(key, path, "must be an absolute path")
    if runtime.verify_period < 0:
        yield _bad("runtime.verify_period", runtime.verify_period,
                   "must be >= 0 seconds (0 disables the verifier)")
    if runtime.start_grace < 1:
        yield _bad("runtime.start_grace", runtime.start_grace,
                   "must be >= 1 second (a container is created before it is started: with "
                   "no grace every start would race its own release)")


def _observability(config: Config) -> Iterator[Problem]:
    listen = config.observability.listen
    if listen:
        try:
            parse_listen(listen)
        except ValueError as exc:
            yield _bad("observability.listen", listen, str(exc))
    yield from _choice("observability.log_level", config.observability.log_level, LOG_LEVELS)
    yield from _choice("observability.log_format", config.observability.log_format,
                       LOG_FORMATS)


def _topology_publisher(config: Config) -> Iterator[Problem]:
    publisher = config.topology_publisher
    yield from _choice("topology_publisher.policy", publisher.policy, TOPOLOGY_POLICIES)
    if publisher.kubeconfig and not publisher.kubeconfig.startswith("/"):
        yield _bad("topology_publisher.kubeconfig", publisher.kubeconfig,
                   'must be an absolute path ("" uses the pod\'s service account)')
    if publisher.node_name and not _NODE_NAME.fullmatch(publisher.node_name):
        yield _bad("topology_publisher.node_name", publisher.node_name,
                   "must be a node name (lowercase letters, digits, '-' and '.'; at most 253) "
                   '("" takes $NODE_NAME)')


def _events(config: Config) -> Iterator[Problem]:
    events = config.events
    if events.queue_capacity < 1:
        yield _bad("events.queue_capacity", events.queue_capacity, "must be 1 or more")
    if events.shared_pool_interval < 1:
        yield _bad("events.shared_pool_interval", events.shared_pool_interval,
                   "must be >= 1 second")


def topology_problems(config: Config, topology: Topology) -> list[Problem]:
    """Problems with this machine: reserved CPUs that are not online, and a shared
    pool the settings would leave empty or below ``min_shared_pool``. Call only on a config
    without :func:`value_problems`."""
    problems: list[Problem] = []
    reserved = reserved_cpus(config)
    # sysfs describes only online CPUs, so "offline" and "absent" cannot be told apart.
    unavailable = reserved - topology.online
    key, written = "cpus.reserved", config.cpus.reserved
    if unavailable:
        problems.append(_bad(key, written, f"CPU(s) {unavailable} are offline or do not exist "
                                           f"(online: {topology.online})"))
    best_pool = topology.online - topology.isolated
    if config.cpus.strict_reservation:
        best_pool -= reserved
        if not best_pool:
            problems.append(_bad(key, written, "with cpus.strict_reservation = true no CPU is "
                                               "left for shared containers (online "
                                               f"{topology.online}, isolated "
                                               f"{topology.isolated or 'none'})"))
    if best_pool and config.cpus.min_shared_pool > len(best_pool):
        problems.append(_bad("cpus.min_shared_pool", config.cpus.min_shared_pool,
                             f"larger than the biggest possible shared pool, {len(best_pool)} "
                             f"CPU(s) ({best_pool})"))
    return problems
