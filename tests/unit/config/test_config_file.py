"""The configuration file: every key's default, every bad input named by key and value, and
the checks against the machine (OFFLINE_ISO: CPUs 0-7, CPU 7 offline, 2-3 isolated)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_adapters.config import (
    Config,
    ConfigError,
    Events,
    TopologyPublisher,
    build,
    keys,
    load_file,
    load_text,
    merge,
    parse_listen,
    to_settings,
)
from cpuset_core import (
    Alignment,
    AlignmentScope,
    AllocationOptions,
    CPUSet,
    MemoryBinding,
    Settings,
    Spanning,
    Unmet,
)
from tests.unit.core.topologies import OFFLINE_ISO


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_text(text, OFFLINE_ISO, source="test.toml")
    return [str(p) for p in caught.value.problems]


def test_an_empty_file_is_the_built_in_defaults_and_the_core_defaults() -> None:
    config = load_text("", OFFLINE_ISO)
    assert config == Config()
    assert to_settings(config) == Settings()


def test_every_key_of_the_documented_schema_loads() -> None:
    text = """
        [pinning]
        annotation = "example.com/cpus"
        namespaces = ["storage", "team-*"]
        [cpus]
        reserved = "0-1"
        strict_reservation = true
        exclusive_on_isolated = true
        full_physical_cores = true
        numa_spanning = "spread"
        keep_free_numa_nodes = true
        alignment = "restricted"
        alignment_scope = "pod"
        bind_memory = "hugepages"
        min_shared_pool = 2
        exclusive_cpu_quota = "kubelet"
        reserved_namespaces = ["kube-system", "monitoring-*"]
        unmet_requests = "refuse"
        [runtime]
        nri_socket = "/run/nri/nri.sock"
        cri_socket = "/run/k3s/containerd/containerd.sock"
        status_socket = ""
        allow_static_cpu_manager = true
        kubelet_cpu_manager_state = "/var/lib/kubelet/cpu_manager_state"
        cgroup_root = "/host/sys/fs/cgroup"
        verify_period = 2
        start_grace = 30
        kernel_updates = false
        systemd_units = false
        [observability]
        listen = "[::1]:9000"
        log_level = "debug"
        log_format = "console"
        [topology_publisher]
        enabled = true
        node_name = "worker-1.example"
        kubeconfig = "/etc/nri-cpuset/kubeconfig"
        policy = "single-numa-node"
        [events]
        enabled = true
        queue_capacity = 50
        shared_pool_interval = 10
    """
    config = load_text(text, OFFLINE_ISO)
    assert len(keys()) == 35
    assert config.events == Events(enabled=True, queue_capacity=50, shared_pool_interval=10)
    assert config.topology_publisher == TopologyPublisher(
        enabled=True, node_name="worker-1.example", kubeconfig="/etc/nri-cpuset/kubeconfig",
        policy="single-numa-node")
    assert (config.runtime.cgroup_root, config.runtime.verify_period) == (
        "/host/sys/fs/cgroup", 2)
    assert config.runtime.kernel_updates is False
    assert config.cpus.exclusive_cpu_quota == "kubelet"
    assert config.runtime.systemd_units is False
    assert config.runtime.start_grace == 30
    assert config.runtime.status_socket == ""
    assert config.observability.listen == "[::1]:9000"
    assert to_settings(config) == Settings(
        pin_annotation="example.com/cpus", pin_namespaces=("storage", "team-*"),
        system_reserved=CPUSet([0, 1]), strict_reservation=True, exclusive_on_isolated=True,
        allocation=AllocationOptions(full_physical_cores=True, numa_spanning=Spanning.SPREAD,
                                     keep_free_numa_nodes=True, alignment=Alignment.RESTRICTED,
                                     alignment_scope=AlignmentScope.POD,
                                     bind_memory=MemoryBinding.HUGEPAGES),
        min_shared_pool=2, reserved_namespaces=("kube-system", "monitoring-*"),
        unmet_requests=Unmet.REFUSE)


@pytest.mark.parametrize(("text", "expected"), [
    ('[observability]\nlistn = "x"',
     "observability.listn: unknown key (did you mean listen?"),
    ("[metrics]\n", "metrics: unknown table"),
    ('reserved = "1"', "reserved: unknown table"),
    ('[cpus]\nreserved = "0-x"', 'cpus.reserved = "0-x": invalid CPU list: unexpected '
                                 "character 'x'"),
    ('[cpus]\nreserved = 1', "cpus.reserved = 1: expected a string"),
    ('[cpus]\nstrict_reservation = "yes"',
     'cpus.strict_reservation = "yes": expected a boolean'),
    ("[cpus]\nmin_shared_pool = true", "cpus.min_shared_pool = true: expected an integer"),
    ("[cpus]\nmin_shared_pool = -1", "cpus.min_shared_pool = -1: must be 0 or more"),
    ('[cpus]\nnuma_spanning = "even"',
     'cpus.numa_spanning = "even": must be one of pack, spread'),
    ('[cpus]\nalignment = "strict"',
     'cpus.alignment = "strict": must be one of none, best-effort, restricted, '
     'single-numa-node'),
    ('[cpus]\nalignment_scope = "node"',
     'cpus.alignment_scope = "node": must be one of container, pod'),
    ('[cpus]\nbind_memory = "all"',
     'cpus.bind_memory = "all": must be one of none, hugepages, exclusive'),
    ('[cpus]\nexclusive_cpu_quota = "none"',
     'cpus.exclusive_cpu_quota = "none": must be one of unlimited, kubelet'),
    ("[cpus]\nexclusive_cpu_quota = false",
     "cpus.exclusive_cpu_quota = false: expected a string"),
    ('[pinning]\nnamespaces = ["a", ""]', 'pinning.namespaces[1] = "": empty pattern'),
    ('[pinning]\nnamespaces = ["a", 3]', "pinning.namespaces[1] = 3: expected a string"),
    ('[pinning]\nnamespaces = "storage"',
     'pinning.namespaces = "storage": expected a list of strings'),
    ('[pinning]\nnamespaces = [" storage"]',
     'pinning.namespaces[0] = " storage": leading or trailing whitespace'),
    ('[pinning]\nannotation = ""', 'pinning.annotation = "": must be a non-empty'),
    ('pinning = 3', "pinning = 3: expected a table"),
    ('[runtime]\nnri_socket = "nri.sock"',
     'runtime.nri_socket = "nri.sock": must be an absolute path'),
    ('[runtime]\nstatus_socket = "/' + "x" * 120 + '"',
     "runtime.status_socket = \"/xxx"),
    ("[runtime]\nstart_grace = 0", "runtime.start_grace = 0: must be >= 1 second"),
    ('[runtime]\nkubelet_cpu_manager_state = "state"',
     'runtime.kubelet_cpu_manager_state = "state": must be an absolute path'),
    ('[observability]\nlisten = "9477"',
     'observability.listen = "9477": expected host:port'),
    ('[observability]\nlisten = "localhost:http"',
     "observability.listen = \"localhost:http\": port 'http' is not a number"),
    ('[observability]\nlisten = "::1:9477"',
     'observability.listen = "::1:9477": an IPv6 host must be in brackets'),
    ('[observability]\nlog_level = "trace"',
     'observability.log_level = "trace": must be one of debug, info, warning, error'),
    ('[observability]\nlog_format = "text"',
     'observability.log_format = "text": must be one of json, console'),
    ('[topology_publisher]\npolicy = "restricted"',
     'topology_publisher.policy = "restricted": must be one of best-effort, single-numa-node'),
    ('[topology_publisher]\nkubeconfig = "kubeconfig"',
     'topology_publisher.kubeconfig = "kubeconfig": must be an absolute path'),
    ('[topology_publisher]\nnode_name = "Worker_1"',
     'topology_publisher.node_name = "Worker_1": must be a node name'),
    ('[events]\nqueue_capacity = 0', 'events.queue_capacity = 0: must be 1 or more'),
    ('[events]\nshared_pool_interval = 0',
     'events.shared_pool_interval = 0: must be >= 1 second'),
    ('[topology_publisher]\nenabled = "yes"',
     'topology_publisher.enabled = "yes": expected a boolean'),
])
def test_a_bad_value_is_an_error_naming_its_key_and_value(text: str, expected: str) -> None:
    found = problems(text)
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_every_problem_is_reported_not_only_the_first() -> None:
    found = problems('[cpus]\nreserved = 5\nmin_shared_pool = "2"\n[pinning]\nnamespace = []')
    assert found == [
        "pinning.namespace: unknown key (did you mean namespaces? known keys in [pinning]: "
        "annotation, namespaces)",
        "cpus.reserved = 5: expected a string",
        'cpus.min_shared_pool = "2": expected an integer',
    ]


def test_a_toml_syntax_error_names_the_line_and_column() -> None:
    with pytest.raises(ConfigError) as caught:
        load_text("[cpus]\nreserved = 0-1\n", OFFLINE_ISO, source="bad.toml")
    message = str(caught.value)
    assert message.startswith("invalid configuration bad.toml (1 problem):")
    assert "TOML syntax error" in message
    assert "line 2, column" in message


@pytest.mark.parametrize(("text", "expected"), [
    ('[cpus]\nreserved = "6-9"',
     'cpus.reserved = "6-9": CPU(s) 7-9 are offline or do not exist (online: 0-6)'),
    ('[cpus]\nreserved = "7"', 'cpus.reserved = "7": CPU(s) 7 are offline or do not exist'),
    ('[cpus]\nreserved = "0-1,4-6"\nstrict_reservation = true',
     'cpus.reserved = "0-1,4-6": with cpus.strict_reservation = true no CPU is left for '
     "shared containers (online 0-6, isolated 2-3)"),
    ("[cpus]\nmin_shared_pool = 6",
     "cpus.min_shared_pool = 6: larger than the biggest possible shared pool, 5 CPU(s) "
     "(0-1,4-6)"),
    ('[cpus]\nreserved = "0"\nstrict_reservation = true\nmin_shared_pool = 5',
     "cpus.min_shared_pool = 5: larger than the biggest possible shared pool, 4 CPU(s)"),
])
def test_values_this_machine_cannot_honour_are_errors(text: str, expected: str) -> None:
    found = problems(text)
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_reserving_every_online_cpu_without_strict_reservation_is_allowed() -> None:
    # Shared containers may still use reserved CPUs; only integer containers find none.
    config = load_text('[cpus]\nreserved = "0-6"', OFFLINE_ISO)
    assert to_settings(config).system_reserved == CPUSet.range(0, 6)


def test_an_empty_allowlist_means_no_namespace_may_pin() -> None:
    settings = to_settings(load_text("[pinning]\nnamespaces = []", OFFLINE_ISO))
    assert not settings.may_pin("default")


def test_a_missing_file_is_an_error_when_named_and_the_defaults_otherwise(tmp_path: Path,
                                                                          ) -> None:
    missing = tmp_path / "config.toml"
    with pytest.raises(ConfigError) as caught:
        load_file(missing, OFFLINE_ISO)
    assert f"invalid configuration {missing}" in str(caught.value)
    assert "the file does not exist" in str(caught.value)
    assert load_file(missing, OFFLINE_ISO, required=False) == Config()


def test_an_unreadable_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        load_file(tmp_path, OFFLINE_ISO)  # a directory
    binary = tmp_path / "config.toml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="cannot read it"):
        load_file(binary, OFFLINE_ISO)


def test_later_layers_win_key_by_key_within_a_table() -> None:
    merged = merge([{"cpus": {"reserved": "0", "min_shared_pool": 1}, "pinning": {"a": 1}},
                    {"cpus": {"reserved": "1"}},
                    {}])
    assert merged == {"cpus": {"reserved": "1", "min_shared_pool": 1}, "pinning": {"a": 1}}
    config = build({"cpus": merged["cpus"]}, OFFLINE_ISO, "x")
    assert (config.cpus.reserved, config.cpus.min_shared_pool) == ("1", 1)


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:9477", ("127.0.0.1", 9477)),
    (":9477", ("", 9477)),
    ("[::1]:80", ("::1", 80)),
    ("node-1.example:65535", ("node-1.example", 65535)),
])
def test_listen_addresses_parse_to_host_and_port(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["127.0.0.1:0", "127.0.0.1:65536", "[::1:80", "[zz]:80",
                                  "bad host:80", "127.0.0.1:"])
def test_bad_listen_addresses_are_refused(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message is checked above
        parse_listen(text)
