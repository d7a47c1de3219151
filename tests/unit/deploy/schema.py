"""What the deployment files are checked against: their paths and the config file's schema.

The schema is written out here on purpose, from the documented configuration (every key with
its default): the config loader validates files itself as well, but these tests must catch a
deployment file that drifts from the documented keys even where the loader is not involved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

REPO: Final = Path(__file__).resolve().parents[3]
DEPLOY: Final = REPO / "deploy"
KUBERNETES: Final = DEPLOY / "kubernetes"
EXAMPLE_CONFIG: Final = DEPLOY / "config.toml"
DEFAULT_CONFIG_PATH: Final = "/etc/nri-cpuset/config.toml"

DEFAULTS: Final[dict[str, dict[str, Any]]] = {
    "pinning": {"annotation": "weka.io/cores-ids", "namespaces": ["*"]},
    "cpus": {
        "reserved": "",
        "strict_reservation": False,
        "exclusive_on_isolated": False,
        "full_physical_cores": False,
        "numa_spanning": "pack",
        "keep_free_numa_nodes": False,
        "alignment": "best-effort",
        "alignment_scope": "container",
        "bind_memory": "none",
        "min_shared_pool": 0,
        "exclusive_cpu_quota": "unlimited",
        "unmet_requests": "best-effort",
        # reserved_namespaces: unset by default (its value then follows `reserved`), which
        # TOML cannot write; the example shows it commented out.
    },
    "runtime": {
        "nri_socket": "/var/run/nri/nri.sock",
        "cri_socket": "/run/containerd/containerd.sock",
        "status_socket": "/run/nri-cpuset/status.sock",
        "allow_static_cpu_manager": False,
        "kubelet_cpu_manager_state": "/var/lib/kubelet/cpu_manager_state",
        "cgroup_root": "/sys/fs/cgroup",
        "verify_period": 5,
        "start_grace": 120,
        "kernel_updates": True,
        "systemd_units": True,
    },
    "observability": {"listen": "127.0.0.1:9477", "log_level": "info", "log_format": "json"},
    "topology_publisher": {"enabled": False, "node_name": "", "kubeconfig": "",
                           "policy": "best-effort"},
    "events": {"enabled": False, "queue_capacity": 1000, "shared_pool_interval": 60},
}


def unknown_keys(document: dict[str, Any]) -> list[str]:
    """Return the dotted names in ``document`` that the schema does not have."""
    unknown = []
    for section, table in document.items():
        if section not in DEFAULTS or not isinstance(table, dict):
            unknown.append(section)
            continue
        unknown.extend(f"{section}.{key}" for key in table if key not in DEFAULTS[section])
    return unknown


def setting(document: dict[str, Any], section: str, key: str) -> Any:
    """Return the effective value of ``section.key``: the file's, else the default."""
    return document.get(section, {}).get(key, DEFAULTS[section][key])
